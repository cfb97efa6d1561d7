//! REST's options, resolved once per host, and the per-test state built from them.

use std::sync::Arc;

use kit_core::{
    Host, KitExecutionContext, KitHttpAttachmentOptions, RestResponseOptions, Sanitizer, SecretRegistry,
};

use crate::RestError;
use crate::registration::{AttachmentCallback, ResponseCallback, RestRegistration};

/// REST's attachment and response options sections.
pub const ATTACHMENTS_SECTION: &str = "Kit:Rest:Attachments";
/// REST's response options section.
pub const RESPONSES_SECTION: &str = "Kit:Rest:Responses";

/// What every REST request of a host goes by.
#[derive(Debug)]
pub(crate) struct RestSettings {
    pub(crate) attachments: KitHttpAttachmentOptions,
    /// A sanitizer of `attachments`' rules, made once: each test's is this one with the run's
    /// secrets, so tests share its rules (making them per test cost a request's worth of
    /// work), and what was sanitized for one test is reused by the next (`Sanitizer::is_same`).
    template: Sanitizer,
    pub(crate) responses: RestResponseOptions,
    /// Whether `capture_attachments` was called anywhere.
    pub(crate) capture: bool,
}

impl RestSettings {
    fn new(attachments: KitHttpAttachmentOptions, responses: RestResponseOptions, capture: bool) -> Self {
        RestSettings {
            template: Sanitizer::new(&attachments, Arc::new(SecretRegistry::new())),
            attachments,
            responses,
            capture,
        }
    }
}

fn registrations(host: &Host) -> impl Iterator<Item = &RestRegistration> {
    host.extensions().get::<RestRegistration>().into_iter().chain(
        host.applications()
            .iter()
            .filter_map(|a| a.extensions().get::<RestRegistration>()),
    )
}

fn resolve(host: &Host) -> Result<Arc<RestSettings>, String> {
    let mut attachment_callbacks: Vec<&(u64, AttachmentCallback)> = registrations(host)
        .flat_map(|r| &r.attachment_callbacks)
        .collect();
    attachment_callbacks.sort_by_key(|(order, _)| *order);
    let mut response_callbacks: Vec<&(u64, ResponseCallback)> =
        registrations(host).flat_map(|r| &r.response_callbacks).collect();
    response_callbacks.sort_by_key(|(order, _)| *order);
    let configuration = host.configuration();
    let attachments = KitHttpAttachmentOptions::resolve(
        Some(ATTACHMENTS_SECTION),
        attachment_callbacks
            .iter()
            .map(|(_, f)| &**f as &dyn Fn(&mut KitHttpAttachmentOptions)),
        configuration,
    )
    .map_err(|e| e.to_string())?;
    let responses = RestResponseOptions::resolve(
        Some(RESPONSES_SECTION),
        response_callbacks
            .iter()
            .map(|(_, f)| &**f as &dyn Fn(&mut RestResponseOptions)),
        configuration,
    )
    .map_err(|e| e.to_string())?;
    Ok(Arc::new(RestSettings::new(
        attachments,
        responses,
        registrations(host).any(|r| r.capture),
    )))
}

/// One test's REST state: its sanitizer and its request counter (attachments are numbered
/// per test).
pub(crate) struct TestRest {
    pub(crate) settings: Arc<RestSettings>,
    pub(crate) sanitizer: Sanitizer,
    requests: u32,
}

impl TestRest {
    /// The next request's number, from 1.
    pub(crate) fn next_request(&mut self) -> u32 {
        self.requests += 1;
        self.requests
    }
}

/// The test's REST settings and sanitizer (made on first use), and the next request number.
pub(crate) fn for_request(
    ctx: &KitExecutionContext,
) -> Result<(Arc<RestSettings>, Sanitizer, u32), RestError> {
    let settings = ctx.host().singleton(resolve);
    let settings = match &*settings {
        Ok(s) => Arc::clone(s),
        Err(message) => {
            return Err(RestError::Client(format!(
                "REST's options are misconfigured: {message}"
            )));
        }
    };
    let secrets = Arc::clone(ctx.run().secrets());
    Ok(ctx.with_extensions(|ext| {
        let state = ext.get_or_insert_with(|| TestRest {
            sanitizer: settings.template.with_secrets(secrets),
            settings,
            requests: 0,
        });
        let n = state.next_request();
        (Arc::clone(&state.settings), state.sanitizer.clone(), n)
    }))
}

/// The sanitizer REST uses for this test (made on first use): its options are REST's
/// attachment options, its secrets the run's. Use it for anything recorded about the test,
/// such as its failure message.
pub fn sanitizer(ctx: &KitExecutionContext) -> Sanitizer {
    let settings = ctx.host().singleton(resolve);
    let secrets = Arc::clone(ctx.run().secrets());
    ctx.with_extensions(|ext| match ext.get::<TestRest>() {
        Some(state) => state.sanitizer.clone(),
        None => match &*settings {
            Ok(settings) => settings.template.with_secrets(secrets),
            Err(_) => Sanitizer::new(&KitHttpAttachmentOptions::default(), secrets),
        },
    })
}

/// The diagnostic caps of the attachment and response options, in characters.
pub(crate) fn for_response(ctx: &KitExecutionContext) -> (usize, usize) {
    match &*ctx.host().singleton(resolve) {
        Ok(s) => (
            s.attachments.max_diagnostic_body_length,
            s.responses.max_diagnostic_body_length,
        ),
        Err(_) => {
            let defaults = RestResponseOptions::default();
            (
                defaults.max_diagnostic_body_length,
                defaults.max_diagnostic_body_length,
            )
        }
    }
}

/// REST's settings (defaults when they are misconfigured: requests report that already).
pub(crate) fn for_attachments(ctx: &KitExecutionContext) -> Arc<RestSettings> {
    match &*ctx.host().singleton(resolve) {
        Ok(s) => Arc::clone(s),
        Err(_) => Arc::new(RestSettings::new(
            KitHttpAttachmentOptions::default(),
            RestResponseOptions::default(),
            false,
        )),
    }
}
