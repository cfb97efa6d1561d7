//! The kit's coverage collectors, the OpenAPI engine they share, and coverage gates.
//!
//! Collectors are deterministic functions of the event stream: registered on the bus while
//! tests run, or replayed by `kit-cli` over an archive, they come to the same report.
//!
//! - [`RestCoverageCollector`]: one item per endpoint called (method and route template), with
//!   its number of calls and the statuses seen. It lists only what it saw.
//! - [`RestTrafficCoverageCollector`]: per endpoint and status, the response fields observed
//!   and those a shape assertion matched: what was seen but never asserted.
//! - [`OpenApiCoverageCollector`]: operations never called, declared statuses never seen,
//!   response fields never asserted, calls the document does not describe.
//!
//! Each writes its sections into a [`Report`](kit_core::report::Report); [`CoverageGates`]
//! read its metrics.
//!
//! ```
//! use kit_core::*;
//! use kit_coverage::RestCoverageCollector;
//!
//! let mut coverage = RestCoverageCollector::default();
//! # let event = |status: i64| Event {
//! #     run_id: RunId::new("r").unwrap(), test_id: TestId::generate(), id: EventId::generate(),
//! #     parent_id: None, sequence: 0, timestamp: Timestamp::now(),
//! #     kind: EventKind::Observation(Observation::new(semconv::OBS_HTTP_RESPONSE, Attributes::new()
//! #         .with(semconv::HTTP_REQUEST_METHOD, "GET")
//! #         .with(semconv::HTTP_ROUTE, "/orders/{id}")
//! #         .with(semconv::HTTP_RESPONSE_STATUS_CODE, status))),
//! # };
//! coverage.on_event(&event(200));
//! coverage.on_event(&event(404));
//! let endpoint = coverage.endpoints().next().unwrap();
//! assert_eq!((endpoint.method.as_str(), endpoint.route.as_str(), endpoint.calls), ("GET", "/orders/{id}", 2));
//! ```
#![deny(missing_docs)]

mod fields;
mod gates;
mod openapi;
mod rest;
mod router;
mod traffic;

pub use fields::body_fields;
pub use gates::{CoverageGates, GateFailure, Percent};
pub use openapi::{
    DeclaredResponse, MAX_MEMBER_DEPTH, MAX_REF_HOPS, OpenApiCoverage, OpenApiCoverageCollector,
    OpenApiDocument, OpenApiError, OpenApiVersion, Operation, OperationCoverage, Problem, ResponseCoverage,
    StatusKey, Undescribed,
};
pub use rest::{EndpointCoverage, RestCoverageCollector};
pub use router::RouteTable;
pub use traffic::{RestTrafficCoverageCollector, TrafficCoverage};

/// Internals the fuzz checks (`fuzz/checks/`) hold to their references. Not part of the API:
/// hidden, and free to change with any release.
#[doc(hidden)]
pub mod __fuzz {
    pub use crate::openapi::YamlThreeWays;
    pub use crate::openapi::yaml_three_ways;
}

use kit_core::{Attributes, Event, EventKind, semconv};

/// What the collectors read from an observation about an HTTP exchange.
pub(crate) struct Exchange<'e> {
    pub(crate) kind: ExchangeKind,
    pub(crate) method: &'e str,
    /// The route template; empty when the event has none.
    pub(crate) route: &'e str,
    pub(crate) status: u16,
    /// The request's URL as recorded (responses only); split when matching needs it.
    pub(crate) url: Option<&'e str>,
    pub(crate) attributes: &'e Attributes,
}

/// Route → method → value, as the collectors keep their entries. Hashed by route: entries are
/// found once per response, and a report over GitHub's thousand routes spent a fifth of its
/// replay in an ordered map comparing routes' long common prefixes. A route is hashed and
/// compared once per lookup (asking whether it is there, then for it, did both twice). Methods
/// are few per route and kept sorted; equal contents compare equal whatever the order they
/// arrived in.
#[derive(Debug, Clone)]
pub(crate) struct ByRoute<V> {
    /// Where each route's methods are in `routes`.
    index: rustc_hash::FxHashMap<String, usize>,
    routes: Vec<Vec<Method<V>>>,
}

/// A method and its value, with the method's first bytes at hand: comparing methods as the
/// sorted list is searched read each name through its pointer, a cache miss per step when
/// routes are revisited after many others.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Method<V> {
    head: u64,
    name: String,
    value: V,
}

/// The first eight bytes of `method`, zero-padded, big-endian: numbers ordered as the names'
/// starts are.
fn head(method: &str) -> u64 {
    let mut bytes = [0u8; 8];
    let n = method.len().min(8);
    bytes[..n].copy_from_slice(&method.as_bytes()[..n]);
    u64::from_be_bytes(bytes)
}

impl<V> Method<V> {
    /// Orders as `self.name.cmp(name)` does, reading the names only past eight bytes.
    fn cmp_name(&self, head: u64, name: &str) -> std::cmp::Ordering {
        self.head.cmp(&head).then_with(|| {
            if self.name.len() <= 8 && name.len() <= 8 {
                // Equal heads: one is the other padded with NULs.
                self.name.len().cmp(&name.len())
            } else {
                self.name.as_str().cmp(name)
            }
        })
    }
}

impl<V> Default for ByRoute<V> {
    fn default() -> Self {
        ByRoute {
            index: rustc_hash::FxHashMap::default(),
            routes: Vec::new(),
        }
    }
}

impl<V: PartialEq> PartialEq for ByRoute<V> {
    fn eq(&self, other: &Self) -> bool {
        self.index.len() == other.index.len()
            && self.index.iter().all(|(route, &at)| {
                other
                    .index
                    .get(route)
                    .is_some_and(|&theirs| self.routes.get(at) == other.routes.get(theirs))
            })
    }
}

impl<V: Eq> Eq for ByRoute<V> {}

impl<V> ByRoute<V> {
    /// The value for `route` and `method`, made by `make` when absent. Present ones are found
    /// without allocating the keys. `None` never happens.
    pub(crate) fn slot_with(
        &mut self,
        route: &str,
        method: &str,
        make: impl FnOnce() -> V,
    ) -> Option<&mut V> {
        let at = match self.index.get(route) {
            Some(&at) => at,
            None => {
                self.routes.push(Vec::new());
                self.index.insert(route.to_owned(), self.routes.len() - 1);
                self.routes.len() - 1
            }
        };
        let methods = self.routes.get_mut(at)?;
        let wanted = head(method);
        let at = match methods.binary_search_by(|m| m.cmp_name(wanted, method)) {
            Ok(at) => at,
            Err(at) => {
                let name = method.to_owned();
                methods.insert(
                    at,
                    Method {
                        head: wanted,
                        name,
                        value: make(),
                    },
                );
                at
            }
        };
        methods.get_mut(at).map(|m| &mut m.value)
    }

    /// Every entry as `(route, method, value)`, ordered by route, then method.
    pub(crate) fn ordered(&self) -> impl Iterator<Item = (&str, &str, &V)> {
        let mut routes: Vec<_> = self.index.iter().collect();
        routes.sort_unstable_by(|a, b| a.0.cmp(b.0));
        routes.into_iter().flat_map(|(route, &at)| {
            self.routes[at]
                .iter()
                .map(move |m| (route.as_str(), m.name.as_str(), &m.value))
        })
    }
}

impl<V: Default> ByRoute<V> {
    /// The value for `route` and `method`, made when absent.
    pub(crate) fn slot(&mut self, route: &str, method: &str) -> Option<&mut V> {
        self.slot_with(route, method, V::default)
    }
}

/// The path and query of an absolute URL (`https://h:1/a/b?x=1#f` → `/a/b`, `x=1`), without
/// parsing the rest: matching runs once per response, and a full parse cost more than it.
pub(crate) fn path_and_query(url: &str) -> (&str, Option<&str>) {
    let url = url.find('#').map_or(url, |fragment| &url[..fragment]);
    let after_authority = match scheme_separator(url) {
        Some(i) => url[i + 3..].find('/').map_or("", |p| &url[i + 3 + p..]),
        None => url,
    };
    match after_authority.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (after_authority, None),
    }
}

/// Where the first `://` begins, found by its colons: searching for the three-byte pattern set
/// up a two-way searcher on every call, and the OpenAPI collector splits every response's URL.
fn scheme_separator(url: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(colon) = url[from..].find(':') {
        let at = from + colon;
        if url[at..].starts_with("://") {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExchangeKind {
    /// `http.response`.
    Response,
    /// `http.contract.shape`.
    Shape,
}

impl<'e> Exchange<'e> {
    pub(crate) fn of(event: &'e Event) -> Option<Self> {
        let EventKind::Observation(observation) = &event.kind else {
            return None;
        };
        let kind = match observation.name.as_ref() {
            semconv::OBS_HTTP_RESPONSE => ExchangeKind::Response,
            semconv::OBS_HTTP_CONTRACT_SHAPE => ExchangeKind::Shape,
            _ => return None,
        };
        let attributes = &observation.attributes;
        Some(Exchange {
            kind,
            method: attributes.get_str(semconv::HTTP_REQUEST_METHOD)?,
            route: attributes.get_str(semconv::HTTP_ROUTE).unwrap_or(""),
            status: attributes
                .get_i64(semconv::HTTP_RESPONSE_STATUS_CODE)
                .and_then(|s| u16::try_from(s).ok())?,
            url: attributes.get_str(semconv::URL_FULL),
            attributes,
        })
    }
}

/// An observation with a throwaway envelope, for the collectors' unit tests.
#[cfg(test)]
pub(crate) fn observed(name: &'static str, attributes: Attributes) -> Event {
    Event {
        run_id: kit_core::RunId::new("r").unwrap(),
        test_id: kit_core::TestId::generate(),
        id: kit_core::EventId::generate(),
        parent_id: None,
        sequence: 0,
        timestamp: kit_core::Timestamp::now(),
        kind: EventKind::Observation(kit_core::Observation::new(name, attributes)),
    }
}

#[cfg(test)]
mod tests {
    use super::{ByRoute, path_and_query};

    proptest::proptest! {
        /// Methods sharing starts, shorter and longer than the eight bytes kept at hand.
        #[test]
        fn methods_are_found_again_and_listed_in_name_order(names in proptest::collection::vec("[AB]{0,11}", 0..16)) {
            let mut methods = ByRoute::<u32>::default();
            for name in &names {
                *methods.slot("/m", name).unwrap() += 1;
            }
            let mut expected = std::collections::BTreeMap::new();
            for name in &names {
                *expected.entry(name.as_str()).or_insert(0) += 1;
            }
            let listed: Vec<_> = methods.ordered().map(|(_, m, n)| (m, *n)).collect();
            proptest::prop_assert_eq!(listed, expected.into_iter().collect::<Vec<_>>());
        }
    }

    #[test]
    fn by_route_finds_each_slot_again_and_lists_them_ordered_whatever_their_arrival() {
        let arrivals = [
            ("/b", "POST"),
            ("/a/{id}", "GET"),
            ("/b", "DELETE"),
            ("/a", "GET"),
            ("/b", "GET"),
            ("/a/{id}", "GET"),
        ];
        let mut forward = ByRoute::<u32>::default();
        let mut backward = ByRoute::<u32>::default();
        for (route, method) in arrivals {
            *forward.slot(route, method).unwrap() += 1;
        }
        for (route, method) in arrivals.iter().rev() {
            *backward.slot(route, method).unwrap() += 1;
        }
        let listed: Vec<_> = forward.ordered().map(|(r, m, n)| (r, m, *n)).collect();
        assert_eq!(
            listed,
            [
                ("/a", "GET", 1),
                ("/a/{id}", "GET", 2),
                ("/b", "DELETE", 1),
                ("/b", "GET", 1),
                ("/b", "POST", 1)
            ]
        );
        assert_eq!(forward, backward, "equal contents compare equal");
        // Methods ordered as their names are, past eight bytes and with shared starts too.
        let mut methods = ByRoute::<u32>::default();
        let names = [
            "PROPFIND",
            "PROPFINDX",
            "PROPPATCH",
            "PROP",
            "GET",
            "PROPFINDA",
            "M-SEARCH",
        ];
        for name in names {
            methods.slot("/m", name);
        }
        *methods.slot("/m", "PROPFINDX").unwrap() += 1;
        let mut sorted = names.to_vec();
        sorted.sort_unstable();
        let listed: Vec<_> = methods.ordered().map(|(_, m, n)| (m, *n)).collect();
        let expected: Vec<_> = sorted
            .iter()
            .map(|m| (*m, u32::from(*m == "PROPFINDX")))
            .collect();
        assert_eq!(listed, expected);
        let mut other_count = backward.clone();
        *other_count.slot("/b", "GET").unwrap() += 1;
        let mut other_route = backward.clone();
        other_route.slot("/c", "GET");
        assert_ne!(forward, other_count);
        assert_ne!(forward, other_route);
        assert_ne!(other_route, forward);
        let mut made = 0;
        *forward
            .slot_with("/a", "GET", || {
                made += 1;
                0
            })
            .unwrap() += 1;
        assert_eq!((made, *forward.slot("/a", "GET").unwrap()), (0, 2));
    }

    #[test]
    fn urls_split_into_path_and_query() {
        assert_eq!(
            path_and_query("https://h:8080/a/b?x=1&y#frag"),
            ("/a/b", Some("x=1&y"))
        );
        assert_eq!(path_and_query("http://h"), ("", None));
        assert_eq!(path_and_query("http://h/?"), ("/", Some("")));
        assert_eq!(path_and_query("/relative/p?q"), ("/relative/p", Some("q")));
        assert_eq!(path_and_query("http://u:[REDACTED]@h/p"), ("/p", None));
        assert_eq!(path_and_query("/a:b/c:/d://e/f"), ("/f", None));
        assert_eq!(path_and_query("x:y"), ("x:y", None));
        assert_eq!(path_and_query("https://h#f?x"), ("", None));
    }
}
