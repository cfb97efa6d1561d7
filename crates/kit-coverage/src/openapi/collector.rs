use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use kit_core::report::{Metric, Report, ReportSection};
use kit_core::{Collector, Event, EventId, EventKind, TestId};

use super::{Found, OpenApiDocument, OpenApiError, Problem};
use crate::traffic::each_asserted_field;
use crate::{ByRoute, Exchange, ExchangeKind};

/// Gap analysis against an OpenAPI document: operations never called, declared statuses
/// never seen, response fields never asserted, and calls the document does not describe.
///
/// Requests are matched to operations by the route template the kit recorded, else by the
/// URL's path (see [`RouteTable`](crate::RouteTable) for the rules); statuses to declared
/// responses by exact code, else range (`4XX`), else `default`; fields asserted come from
/// `http.contract.shape` observations of the same request.
///
/// ```no_run
/// use kit_coverage::OpenApiCoverageCollector;
///
/// let coverage = OpenApiCoverageCollector::from_spec("openapi.yaml")?
///     .exclude_deprecated()
///     .exclude(["GET /health"])?;
/// # Ok::<(), kit_coverage::OpenApiError>(())
/// ```
#[derive(Debug, Clone)]
pub struct OpenApiCoverageCollector {
    document: Arc<OpenApiDocument>,
    excluded: Vec<Exclusion>,
    operations: Vec<OperationState>,
    /// Calls the document does not describe, by route and method, and why: counted without
    /// allocating or formatting anything per call (the reason is written when reported).
    undescribed: ByRoute<Vec<(Unmatched, u64)>>,
    /// Where each request of a running test went, for the shape assertions on its response;
    /// dropped when the test finishes, so memory follows the tests running, not the run.
    requests: HashMap<TestId, HashMap<EventId, (usize, Option<usize>)>>,
}

/// Why a call is not described by the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unmatched {
    /// No path matches.
    NoPath,
    /// This path matches, without the call's method.
    Method(usize),
    /// This operation matches, without declaring the status.
    Status(u16, usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Exclusion {
    No,
    Deprecated,
    Named,
}

#[derive(Debug, Clone, Default)]
struct OperationState {
    calls: u64,
    /// Responses seen, per declared response.
    seen: Vec<u64>,
    /// Declared fields asserted, per declared response.
    asserted: Vec<BTreeSet<String>>,
}

/// Coverage of one operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OperationCoverage {
    /// The method, upper case.
    pub method: String,
    /// The path key.
    pub path: String,
    /// Its operationId.
    pub operation_id: Option<String>,
    /// Left out of the figures (deprecated, or excluded by name).
    pub excluded: bool,
    /// Responses seen.
    pub calls: u64,
    /// Per declared response: its key, responses seen, fields asserted, fields declared.
    pub responses: Vec<ResponseCoverage>,
}

/// Coverage of one declared response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResponseCoverage {
    /// `200`, `4XX`, `default`.
    pub status: String,
    /// Responses seen that it describes.
    pub seen: u64,
    /// Declared fields a shape assertion matched.
    pub asserted: Vec<String>,
    /// Declared fields never asserted.
    pub unasserted: Vec<String>,
}

/// A call the document does not describe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Undescribed {
    /// The method.
    pub method: String,
    /// The route template (or path) called.
    pub route: String,
    /// Why it is not described.
    pub reason: String,
    /// How many times.
    pub calls: u64,
}

/// The figures of an [`OpenApiCoverageCollector`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OpenApiCoverage {
    /// Operations called, of those not excluded.
    pub operations: Metric,
    /// Declared responses seen, of those of operations not excluded.
    pub statuses: Metric,
    /// Declared response fields asserted, of those of operations not excluded.
    pub fields: Metric,
    /// Every operation.
    pub per_operation: Vec<OperationCoverage>,
    /// Calls the document does not describe.
    pub undescribed: Vec<Undescribed>,
}

impl OpenApiCoverageCollector {
    /// The category of its report sections.
    pub const CATEGORY: &'static str = "OpenAPI";

    /// Loads the document at `path` (Swagger 2.0, OpenAPI 3.0–3.2, JSON or YAML).
    pub fn from_spec(path: impl AsRef<Path>) -> Result<Self, OpenApiError> {
        Ok(Self::new(Arc::new(OpenApiDocument::from_path(path)?)))
    }

    /// A collector over a loaded document (one document can serve many collectors).
    pub fn new(document: Arc<OpenApiDocument>) -> Self {
        let operations = document
            .operations()
            .iter()
            .map(|o| OperationState {
                calls: 0,
                seen: vec![0; o.responses.len()],
                asserted: vec![BTreeSet::new(); o.responses.len()],
            })
            .collect();
        OpenApiCoverageCollector {
            excluded: vec![Exclusion::No; document.operations().len()],
            document,
            operations,
            undescribed: ByRoute::default(),
            requests: HashMap::new(),
        }
    }

    /// The document.
    pub fn document(&self) -> &OpenApiDocument {
        &self.document
    }

    /// Replaces the base paths stripped from requests (see
    /// [`OpenApiDocument::with_base_paths`]).
    pub fn with_base_paths<S: Into<String>>(mut self, base_paths: impl IntoIterator<Item = S>) -> Self {
        let document = (*self.document).clone().with_base_paths(base_paths);
        self.document = Arc::new(document);
        self
    }

    /// Leaves operations marked `deprecated` out of every figure.
    pub fn exclude_deprecated(mut self) -> Self {
        for (state, operation) in self.excluded.iter_mut().zip(self.document.operations()) {
            if operation.deprecated && *state == Exclusion::No {
                *state = Exclusion::Deprecated;
            }
        }
        self
    }

    /// Leaves the operations named (`GET /pets/{id}` as the document writes the path, or an
    /// operationId) out of every figure. A name that matches nothing is an error, so a
    /// renamed operation does not silently come back into the gate.
    pub fn exclude<S: AsRef<str>>(
        mut self,
        names: impl IntoIterator<Item = S>,
    ) -> Result<Self, OpenApiError> {
        for name in names {
            let name = name.as_ref();
            let index = self.document.operation_named(name).ok_or_else(|| {
                OpenApiError::new(
                    self.document.source(),
                    None,
                    Problem::UnknownOperation(name.to_owned()),
                )
            })?;
            self.excluded[index] = Exclusion::Named;
        }
        Ok(self)
    }

    /// The figures so far.
    pub fn coverage(&self) -> OpenApiCoverage {
        let mut operations = Metric::new("operations", 0, 0);
        let mut statuses = Metric::new("statuses", 0, 0);
        let mut fields = Metric::new("fields", 0, 0);
        let mut per_operation = Vec::with_capacity(self.operations.len());
        for ((operation, state), exclusion) in self
            .document
            .operations()
            .iter()
            .zip(&self.operations)
            .zip(&self.excluded)
        {
            let excluded = *exclusion != Exclusion::No;
            let mut responses = Vec::with_capacity(operation.responses.len());
            for ((declared, seen), asserted) in
                operation.responses.iter().zip(&state.seen).zip(&state.asserted)
            {
                if !excluded {
                    statuses.total += 1;
                    statuses.covered += u64::from(*seen > 0);
                    fields.total += declared.fields.len() as u64;
                    fields.covered += asserted.len() as u64;
                }
                responses.push(ResponseCoverage {
                    status: declared.status.to_string(),
                    seen: *seen,
                    asserted: asserted.iter().cloned().collect(),
                    unasserted: declared
                        .fields
                        .iter()
                        .filter(|f| !asserted.contains(*f))
                        .cloned()
                        .collect(),
                });
            }
            if !excluded {
                operations.total += 1;
                operations.covered += u64::from(state.calls > 0);
            }
            per_operation.push(OperationCoverage {
                method: operation.method.clone(),
                path: operation.path.clone(),
                operation_id: operation.operation_id.clone(),
                excluded,
                calls: state.calls,
                responses,
            });
        }
        OpenApiCoverage {
            operations,
            statuses,
            fields,
            per_operation,
            undescribed: self.undescribed(),
        }
    }

    /// Calls not described, ordered by route, method and reason.
    fn undescribed(&self) -> Vec<Undescribed> {
        let mut undescribed: Vec<Undescribed> = self
            .undescribed
            .ordered()
            .flat_map(|(route, method, reasons)| {
                reasons.iter().map(move |&(why, calls)| Undescribed {
                    method: method.to_owned(),
                    route: route.to_owned(),
                    reason: self.reason(why),
                    calls,
                })
            })
            .collect();
        // Routes and methods come ordered; this orders the reasons of each.
        undescribed.sort_by(|a, b| (&a.route, &a.method, &a.reason).cmp(&(&b.route, &b.method, &b.reason)));
        undescribed
    }

    fn reason(&self, why: Unmatched) -> String {
        match why {
            Unmatched::NoPath => "no path of the document matches".into(),
            Unmatched::Method(path) => {
                let methods: Vec<&str> = self.document.methods_of(path).collect();
                format!(
                    "`{}` declares {}",
                    self.document.paths()[path],
                    if methods.is_empty() {
                        "no operation".to_owned()
                    } else {
                        methods.join(", ")
                    }
                )
            }
            Unmatched::Status(status, operation) => format!(
                "status {status} is not declared by {}",
                self.document.operations()[operation].label()
            ),
        }
    }

    fn locate(&self, exchange: &Exchange<'_>) -> Found {
        let url = exchange.url.map(crate::path_and_query);
        let template = (!exchange.route.is_empty()).then_some(exchange.route);
        self.document.locate(exchange.method, template, url)
    }

    fn count_undescribed(&mut self, exchange: &Exchange<'_>, why: Unmatched) {
        let Some(reasons) = self.undescribed.slot(exchange.route, exchange.method) else {
            return;
        };
        match reasons.iter_mut().find(|(seen, _)| *seen == why) {
            Some((_, calls)) => *calls += 1,
            None => reasons.push((why, 1)),
        }
    }

    fn on_response(&mut self, event: &Event, exchange: &Exchange<'_>) {
        let operation = match self.locate(exchange) {
            Found::Operation(operation) => operation,
            Found::PathOnly(path) => return self.count_undescribed(exchange, Unmatched::Method(path)),
            Found::Nothing => return self.count_undescribed(exchange, Unmatched::NoPath),
        };
        let response = self.document.operations()[operation].response_index(exchange.status);
        let state = &mut self.operations[operation];
        state.calls += 1;
        match response {
            Some(index) => state.seen[index] += 1,
            None => self.count_undescribed(exchange, Unmatched::Status(exchange.status, operation)),
        }
        if let Some(request) = event.parent_id {
            self.requests
                .entry(event.test_id)
                .or_default()
                .insert(request, (operation, response));
        }
    }

    fn on_shape(&mut self, event: &Event, exchange: &Exchange<'_>) {
        let known = event
            .parent_id
            .and_then(|request| self.requests.get(&event.test_id)?.get(&request).copied());
        let (operation, response) = match known {
            Some(found) => found,
            // A shape whose response was not seen (a salvaged archive): match it afresh.
            None => match self.locate(exchange) {
                Found::Operation(operation) => (
                    operation,
                    self.document.operations()[operation].response_index(exchange.status),
                ),
                _ => return,
            },
        };
        let Some(response) = response else {
            return;
        };
        let declared = &self.document.operations()[operation].responses[response].fields;
        let asserted = &mut self.operations[operation].asserted[response];
        each_asserted_field(exchange, |field| {
            // Declared fields are sorted: a binary search finds them.
            if !asserted.contains(field) && declared.binary_search_by(|d| d.as_str().cmp(field)).is_ok() {
                asserted.insert(field.to_owned());
            }
        });
    }
}

impl Collector for OpenApiCoverageCollector {
    fn on_event(&mut self, event: &Event) {
        if let EventKind::TestFinished(_) = &event.kind {
            self.requests.remove(&event.test_id);
            return;
        }
        let Some(exchange) = Exchange::of(event) else {
            return;
        };
        match exchange.kind {
            ExchangeKind::Response => self.on_response(event, &exchange),
            ExchangeKind::Shape => self.on_shape(event, &exchange),
        }
    }

    fn write_report(&self, report: &mut Report) {
        let coverage = self.coverage();
        let document = &self.document;
        let excluded = coverage.per_operation.iter().filter(|o| o.excluded).count();
        let mut operations =
            ReportSection::new("openapi.operations", Self::CATEGORY, "Operations never called")
                .with_metric(coverage.operations.clone())
                .with_columns(["Method", "Path", "Operation id"])
                .with_note(format!(
                    "{} ({}): {} paths, {} operations, {} declared responses",
                    document.source(),
                    document.version(),
                    document.paths().len(),
                    document.operations().len(),
                    document.declared_responses()
                ));
        if excluded > 0 {
            operations = operations.with_note(format!("{excluded} operation(s) excluded from every figure"));
        }
        for note in document.notes() {
            operations = operations.with_note(note.clone());
        }
        let mut statuses =
            ReportSection::new("openapi.statuses", Self::CATEGORY, "Declared statuses never seen")
                .with_metric(coverage.statuses.clone())
                .with_columns(["Method", "Path", "Status"])
                .with_note("listed for operations that were called; those never called are listed above");
        let mut fields =
            ReportSection::new("openapi.fields", Self::CATEGORY, "Response fields never asserted")
                .with_metric(coverage.fields.clone())
                .with_columns(["Method", "Path", "Status", "Asserted", "Never asserted"])
                .with_note(format!(
                    "fields: schema properties to {} members deep, following one $ref from a property",
                    super::MAX_MEMBER_DEPTH
                ));
        for operation in coverage.per_operation.iter().filter(|o| !o.excluded) {
            let id = operation.operation_id.clone().unwrap_or_default();
            if operation.calls == 0 {
                operations = operations.with_row([operation.method.clone(), operation.path.clone(), id]);
                continue;
            }
            for response in &operation.responses {
                if response.seen == 0 {
                    statuses = statuses.with_row([
                        operation.method.clone(),
                        operation.path.clone(),
                        response.status.clone(),
                    ]);
                } else if !response.unasserted.is_empty() || !response.asserted.is_empty() {
                    let total = response.asserted.len() + response.unasserted.len();
                    fields = fields.with_row([
                        operation.method.clone(),
                        operation.path.clone(),
                        response.status.clone(),
                        format!("{}/{total}", response.asserted.len()),
                        response.unasserted.join(", "),
                    ]);
                }
            }
        }
        let mut undescribed = ReportSection::new(
            "openapi.undescribed",
            Self::CATEGORY,
            "Calls the document does not describe",
        )
        .with_columns(["Method", "Route", "Calls", "Why"]);
        for call in &coverage.undescribed {
            undescribed = undescribed.with_row([
                call.method.clone(),
                call.route.clone(),
                call.calls.to_string(),
                call.reason.clone(),
            ]);
        }
        report
            .sections
            .extend([operations, statuses, fields, undescribed]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kit_core::*;

    const DOCUMENT: &str = r#"{
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/orders/{id}": {
                "get": {"responses": {"200": {"description": "found"}, "404": {"description": "gone"}}}
            },
            "/health": {}
        }
    }"#;

    fn response(method: &str, route: &str, url: &str, status: i64) -> Event {
        crate::observed(
            semconv::OBS_HTTP_RESPONSE,
            Attributes::new()
                .with(semconv::HTTP_REQUEST_METHOD, method)
                .with(semconv::HTTP_ROUTE, route)
                .with(semconv::URL_FULL, url)
                .with(semconv::HTTP_RESPONSE_STATUS_CODE, status),
        )
    }

    #[test]
    fn undescribed_calls_are_counted_per_route_method_and_reason_and_listed_in_order() {
        let document = Arc::new(OpenApiDocument::from_str(DOCUMENT, "inline").unwrap());
        let mut collector = OpenApiCoverageCollector::new(document);
        for event in [
            response("GET", "/orders/{id}", "http://h/orders/1", 500),
            response("POST", "/zzz", "http://h/zzz", 200),
            response("DELETE", "/orders/{id}", "http://h/orders/1", 204),
            response("GET", "/orders/{id}", "http://h/orders/1", 418),
            response("GET", "/orders/{id}", "http://h/orders/2", 500),
            response("GET", "/health", "http://h/health", 200),
            response("GET", "/orders/{id}", "http://h/orders/3", 200),
        ] {
            collector.on_event(&event);
        }
        let listed: Vec<_> = collector
            .coverage()
            .undescribed
            .into_iter()
            .map(|u| (u.route, u.method, u.reason, u.calls))
            .collect();
        let row = |route: &str, method: &str, reason: &str, calls| {
            (route.to_owned(), method.to_owned(), reason.to_owned(), calls)
        };
        assert_eq!(
            listed,
            [
                row("/health", "GET", "`/health` declares no operation", 1),
                row("/orders/{id}", "DELETE", "`/orders/{id}` declares GET", 1),
                row(
                    "/orders/{id}",
                    "GET",
                    "status 418 is not declared by GET /orders/{id}",
                    1
                ),
                row(
                    "/orders/{id}",
                    "GET",
                    "status 500 is not declared by GET /orders/{id}",
                    2
                ),
                row("/zzz", "POST", "no path of the document matches", 1),
            ]
        );
    }
}
