//! Client resolution: from a test and an optional name to a built, per-test client.

use std::collections::HashMap;
use std::sync::Arc;

use kit_core::{Host, KitExecutionContext};
use url::Url;

use crate::RestError;
use crate::registration::{ClientRegistration, DEFAULT_CLIENT, RestRegistration};
use crate::server::InProcessServer;

/// A client resolved for one test: its own `reqwest::Client` (so its own cookie jar) and
/// base address.
#[derive(Debug)]
pub(crate) struct ResolvedClient {
    pub(crate) client: reqwest::Client,
    pub(crate) base: Url,
    /// The qualified name (`orders:Default`, or the name alone for host-level clients).
    pub(crate) target: String,
}

/// The clients one test has resolved, by qualified name. Kept in the test's extensions, so
/// no other test ever sees them.
#[derive(Default)]
struct TestClients(HashMap<String, Arc<ResolvedClient>>);

/// One registered client and where it was registered.
struct Candidate<'h> {
    application: Option<&'h str>,
    registration: &'h ClientRegistration,
}

impl Candidate<'_> {
    fn qualified(&self) -> String {
        match self.application {
            Some(app) => format!("{app}:{}", self.registration.name()),
            None => self.registration.name().to_owned(),
        }
    }
}

/// Every client, host-level first, then each application's in registration order; of clients
/// sharing a qualified name only the first registered counts.
fn candidates(host: &Host) -> Vec<Candidate<'_>> {
    let mut out: Vec<Candidate<'_>> = Vec::new();
    let host_level = host
        .extensions()
        .get::<RestRegistration>()
        .into_iter()
        .map(|r| (None, r));
    let per_app = host.applications().iter().filter_map(|a| {
        a.extensions()
            .get::<RestRegistration>()
            .map(|r| (Some(a.name()), r))
    });
    for (application, registration) in host_level.chain(per_app) {
        for client in &registration.clients {
            let candidate = Candidate {
                application,
                registration: client,
            };
            let name = candidate.qualified();
            if !out.iter().any(|c| c.qualified().eq_ignore_ascii_case(&name)) {
                out.push(candidate);
            }
        }
    }
    out
}

fn pick<'h>(
    host: &'h Host,
    ctx: &KitExecutionContext,
    requested: Option<&str>,
) -> Result<Candidate<'h>, RestError> {
    let mut all = candidates(host);
    let named = |name: &str| all.iter().position(|c| c.qualified().eq_ignore_ascii_case(name));
    let bound_app = ctx.application();
    let found = match requested {
        // A qualified name is exact.
        Some(name) if name.contains(':') => named(name),
        // The application-qualified form first, then the name as given, then the one
        // application client of that name.
        Some(name) => match bound_app
            .and_then(|app| named(&format!("{app}:{name}")))
            .or_else(|| named(name))
        {
            Some(i) => Some(i),
            None => unique_by_name(&all, name)?,
        },
        None => {
            let bound_client = ctx.client_binding().and_then(|b| {
                b.split_once(':')
                    .filter(|(p, _)| p.eq_ignore_ascii_case("rest"))
                    .map(|(_, c)| c)
            });
            match (bound_app, bound_client) {
                (Some(app), Some(client)) => named(&format!("{app}:{client}")),
                (Some(app), None) => all
                    .iter()
                    .position(|c| c.application.is_some_and(|a| a.eq_ignore_ascii_case(app))),
                (None, _) => match named(DEFAULT_CLIENT) {
                    Some(i) => Some(i),
                    None => unique_by_name(&all, DEFAULT_CLIENT)?,
                },
            }
        }
    };
    match found {
        Some(i) => Ok(all.swap_remove(i)),
        None => {
            let names: Vec<String> = all.iter().map(Candidate::qualified).collect();
            let wanted = match requested {
                Some(name) => format!("the REST client '{name}'"),
                None => "a REST client".to_owned(),
            };
            let binding = match bound_app {
                Some(app) => format!(" (bound to application '{app}')"),
                None => String::new(),
            };
            Err(RestError::Resolution(format!(
                "cannot resolve {wanted} for test '{}'{binding}; registered REST clients: {}",
                ctx.test_name(),
                if names.is_empty() {
                    "none (register one with add_rest)".to_owned()
                } else {
                    names.join(", ")
                }
            )))
        }
    }
}

/// The one application client with this unqualified name; an error naming every candidate
/// when several applications share it.
fn unique_by_name(all: &[Candidate<'_>], name: &str) -> Result<Option<usize>, RestError> {
    let matches: Vec<usize> = all
        .iter()
        .enumerate()
        .filter(|(_, c)| c.application.is_some() && c.registration.name().eq_ignore_ascii_case(name))
        .map(|(i, _)| i)
        .collect();
    match matches.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(*one)),
        many => Err(RestError::Resolution(format!(
            "the REST client name '{name}' is registered by several applications: {}; qualify it, e.g. rest_named(\"{}\")",
            many.iter()
                .map(|i| all[*i].qualified())
                .collect::<Vec<_>>()
                .join(", "),
            all[many[0]].qualified()
        ))),
    }
}

/// Joins a base URL and a relative path: `http://h/api` + `/v1/orders` is
/// `http://h/api/v1/orders`. The base's path is kept, unlike RFC 3986 resolution, which
/// would drop it for a path starting with `/`.
pub(crate) fn join_path(base: &Url, path: &str) -> Result<Url, url::ParseError> {
    let (path, query) = match path.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path, None),
    };
    let mut url = base.clone();
    let joined = format!(
        "{}/{}",
        base.path().trim_end_matches('/'),
        path.trim_start_matches('/')
    );
    url.set_path(&joined);
    if let Some(query) = query {
        let combined = match base.query() {
            Some(existing) if !existing.is_empty() => format!("{existing}&{query}"),
            _ => query.to_owned(),
        };
        url.set_query(Some(&combined));
    }
    Ok(url)
}

fn base_address(host: &Host, candidate: &Candidate<'_>, requested: Option<&str>) -> Result<Url, RestError> {
    let qualified = candidate.qualified();
    let registration = candidate.registration;
    if let Some(url) = &registration.base_url {
        return Ok(url.clone());
    }
    let Some(app_name) = candidate.application else {
        return Err(RestError::Client(format!(
            "the host-level REST client '{qualified}' has no base URL; give it one with .base_url(\"https://…\")"
        )));
    };
    let config = host.configuration();
    let app_section = format!("Kit:Applications:{app_name}");
    let endpoint_path = |name: &str, required: bool| -> Result<Option<String>, RestError> {
        let key = format!("{app_section}:Endpoints:{name}");
        match config.get(&key) {
            Some(path) => Ok(Some(path.to_owned())),
            None if required => Err(RestError::Client(format!(
                "REST client '{qualified}' uses endpoint '{name}', but {key} is not configured"
            ))),
            None => Ok(None),
        }
    };
    let base_key = format!("{app_section}:BaseUrl");
    if let Some(text) = config.get(&base_key) {
        let base = Url::parse(text).ok().filter(Url::has_host).ok_or_else(|| {
            RestError::Client(format!(
                "{base_key} (from {}) is {text:?}, which is not an absolute URL",
                config.origin(&base_key).unwrap_or("configuration")
            ))
        })?;
        return match &registration.endpoint {
            Some(endpoint) => {
                let path = endpoint_path(endpoint, true)?.unwrap_or_default();
                join_path(&base, &path).map_err(|e| RestError::Client(format!("{qualified}: {e}")))
            }
            None => Ok(base),
        };
    }
    let application = host.application(app_name);
    if let Some(server) = application.and_then(|a| a.extensions().get::<InProcessServer>()) {
        let address = server.address().map_err(RestError::Client)?;
        let base = Url::parse(&format!("http://{address}/")).map_err(|e| RestError::Client(e.to_string()))?;
        // Rooted at the client's endpoint, else at the requested name as an endpoint.
        let path = match (&registration.endpoint, requested) {
            (Some(endpoint), _) => endpoint_path(endpoint, true)?,
            (None, Some(name)) if !name.contains(':') => endpoint_path(name, false)?,
            _ => None,
        };
        return match path {
            Some(path) => join_path(&base, &path).map_err(|e| RestError::Client(format!("{qualified}: {e}"))),
            None => Ok(base),
        };
    }
    Err(RestError::Client(format!(
        "REST client '{qualified}' has no base address: configure {base_key} (or the environment variable \
         Kit__Applications__{app_name}__BaseUrl), give the client .base_url(\"https://…\"), or add an in-process server"
    )))
}

/// The test's client for `requested` (or the one resolution picks), built on first use.
pub(crate) fn resolve(
    ctx: &KitExecutionContext,
    requested: Option<&str>,
) -> Result<Arc<ResolvedClient>, RestError> {
    let host = ctx.host();
    let candidate = pick(host, ctx, requested)?;
    let qualified = candidate.qualified();
    if let Some(found) = ctx.with_extensions(|ext| {
        ext.get::<TestClients>()
            .and_then(|c| c.0.get(&qualified).cloned())
    }) {
        return Ok(found);
    }
    let base = base_address(host, &candidate, requested)?;
    let mut builder = reqwest::Client::builder()
        .cookie_store(true)
        // A 3xx and its Location must reach the test's assertions.
        .redirect(reqwest::redirect::Policy::none());
    for configure in &candidate.registration.configure {
        builder = configure(builder);
    }
    let client = builder
        .build()
        .map_err(|e| RestError::Client(format!("REST client '{qualified}' could not be built: {e}")))?;
    let resolved = Arc::new(ResolvedClient {
        client,
        base,
        target: qualified.clone(),
    });
    ctx.with_extensions(|ext| {
        ext.get_or_insert_with(TestClients::default)
            .0
            .entry(qualified)
            .or_insert_with(|| Arc::clone(&resolved))
            .clone()
    });
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_join_under_the_base_path() {
        let base = Url::parse("http://h:1/api/v1/").unwrap();
        assert_eq!(
            join_path(&base, "/orders").unwrap().as_str(),
            "http://h:1/api/v1/orders"
        );
        assert_eq!(
            join_path(&base, "orders/2?x=1").unwrap().as_str(),
            "http://h:1/api/v1/orders/2?x=1"
        );
        let root = Url::parse("http://h:1").unwrap();
        assert_eq!(join_path(&root, "/orders").unwrap().as_str(), "http://h:1/orders");
        let with_query = Url::parse("http://h/a?k=v").unwrap();
        assert_eq!(
            join_path(&with_query, "b?x=1").unwrap().as_str(),
            "http://h/a/b?k=v&x=1"
        );
    }
}
