//! Options shared by protocols: JSON diagnostics, HTTP attachments, response limits.
//!
//! Each protocol owns one instance of each type, bound from its own configuration section
//! (REST: `Kit:Rest:Attachments`, `Kit:Rest:Responses`). A protocol that names no section
//! binds from `Kit:Http:Attachments` and `Kit:Http:Responses`.
//!
//! Binding order: code callbacks run first, in registration order; then the configuration
//! section is bound over the result, so **configuration wins over code**. A list in
//! configuration (`SensitiveHeaders:0`, …) *adds* to the list code left (as ASP.NET Core's
//! binder does), so configuration can widen redaction but never silently narrow it; code can
//! remove entries.
//!
//! ```
//! use kit_core::{Configuration, KitHttpAttachmentOptions};
//!
//! let mut config = Configuration::new();
//! config.set("Kit:Rest:Attachments:CaptureResponses", "false");
//! config.set("Kit:Rest:Attachments:SensitiveHeaders:0", "X-Session");
//! let from_code: &dyn Fn(&mut KitHttpAttachmentOptions) = &|o| o.capture_responses = true;
//! let options = KitHttpAttachmentOptions::resolve(Some("Kit:Rest:Attachments"), [from_code], &config).unwrap();
//! assert!(!options.capture_responses, "configuration wins");
//! assert!(options.sensitive_headers.iter().any(|h| h == "X-Session"));
//! assert!(options.sensitive_headers.iter().any(|h| h == "Authorization"));
//! assert_eq!(options.configuration_section_name(), "Kit:Rest:Attachments");
//! ```

use std::time::Duration;

use crate::config::{ConfigError, Configuration, Section};

/// Headers redacted by default.
pub const DEFAULT_SENSITIVE_HEADERS: [&str; 5] = [
    "Authorization",
    "Proxy-Authorization",
    "Cookie",
    "Set-Cookie",
    "X-Api-Key",
];

/// Query parameters redacted by default.
pub const DEFAULT_SENSITIVE_QUERY_PARAMETERS: [&str; 14] = [
    "password",
    "token",
    "access_token",
    "refresh_token",
    "secret",
    "apiKey",
    "api_key",
    "authorization",
    "cookie",
    "connectionString",
    "clientSecret",
    "client_secret",
    "id_token",
    "key",
];

/// JSON properties (and form fields, multipart parts, XML names) redacted by default.
pub const DEFAULT_SENSITIVE_JSON_PROPERTIES: [&str; 13] = [
    "password",
    "token",
    "access_token",
    "refresh_token",
    "secret",
    "apiKey",
    "api_key",
    "authorization",
    "cookie",
    "connectionString",
    "clientSecret",
    "client_secret",
    "id_token",
];

/// The default cap on bodies in attachments, traces and messages, in characters.
pub const DEFAULT_MAX_DIAGNOSTIC_BODY_LENGTH: usize = 65_536;

/// The default cap on response bodies, in bytes (10 MiB).
pub const DEFAULT_MAX_RESPONSE_BODY_BYTES: u64 = 10 * 1024 * 1024;

/// The default time a request may take, from its sending to its body's last byte: 100 s, as
/// .NET's `HttpClient`, for which the specification was written, waits by default.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(100);

/// The section HTTP attachment options bind from when a protocol names none.
pub const HTTP_ATTACHMENTS_SECTION: &str = "Kit:Http:Attachments";
/// The section HTTP response options bind from when a protocol names none.
pub const HTTP_RESPONSES_SECTION: &str = "Kit:Http:Responses";

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// Adds the configured items of `name` to `list`, skipping ones already there.
fn extend_list(section: &Section<'_>, name: &str, list: &mut Vec<String>) {
    for item in section.get_list(name).unwrap_or_default() {
        if !list.iter().any(|l| l.eq_ignore_ascii_case(&item)) {
            list.push(item);
        }
    }
}

fn bind_bool(section: &Section<'_>, name: &str, slot: &mut bool) -> Result<(), ConfigError> {
    if let Some(v) = section.get_bool(name)? {
        *slot = v;
    }
    Ok(())
}

/// A configured time in seconds, fractions allowed; 0 is no limit.
struct Seconds(Option<Duration>);

impl std::str::FromStr for Seconds {
    type Err = ();

    fn from_str(text: &str) -> Result<Self, ()> {
        let seconds: f64 = text.parse().map_err(|_| ())?;
        if seconds == 0.0 {
            return Ok(Seconds(None));
        }
        // Negative, not a number, or past what a Duration holds, refused.
        Duration::try_from_secs_f64(seconds)
            .map(|duration| Seconds(Some(duration)))
            .map_err(|_| ())
    }
}

fn bind_number<T: std::str::FromStr>(
    section: &Section<'_>,
    name: &str,
    slot: &mut T,
) -> Result<(), ConfigError> {
    if let Some(v) = section.get_parsed(name, "a whole number")? {
        *slot = v;
    }
    Ok(())
}

/// How bodies are shown in diagnostics, shared by every protocol that shows JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JsonDiagnosticOptions {
    /// Redact sensitive data (default true). User-info in URLs is removed regardless.
    pub redact_sensitive_data: bool,
    /// Redact credentials known by their form whatever names them (default true, and only
    /// with `redact_sensitive_data`): JSON Web Tokens, PEM private keys, GitHub, Stripe,
    /// Slack… tokens (`docs/redaction.md`, rule 10). Off, a token-shaped fixture or an
    /// expired JWT stays readable in the trace, and a credential under an unlisted name
    /// leaks; run `kit-cli audit --no-forms` on such a run.
    pub redact_credential_forms: bool,
    /// Cap on bodies, in characters (default 65 536).
    pub max_diagnostic_body_length: usize,
    /// Property names redacted at any depth, compared case-insensitively.
    pub sensitive_json_properties: Vec<String>,
}

impl Default for JsonDiagnosticOptions {
    fn default() -> Self {
        JsonDiagnosticOptions {
            redact_sensitive_data: true,
            redact_credential_forms: true,
            max_diagnostic_body_length: DEFAULT_MAX_DIAGNOSTIC_BODY_LENGTH,
            sensitive_json_properties: strings(&DEFAULT_SENSITIVE_JSON_PROPERTIES),
        }
    }
}

impl JsonDiagnosticOptions {
    /// Binds `RedactSensitiveData`, `RedactCredentialForms`, `MaxDiagnosticBodyLength` and
    /// `SensitiveJsonProperties` from `section`.
    pub fn bind(&mut self, section: &Section<'_>) -> Result<(), ConfigError> {
        bind_bool(section, "RedactSensitiveData", &mut self.redact_sensitive_data)?;
        bind_bool(
            section,
            "RedactCredentialForms",
            &mut self.redact_credential_forms,
        )?;
        bind_number(
            section,
            "MaxDiagnosticBodyLength",
            &mut self.max_diagnostic_body_length,
        )?;
        extend_list(
            section,
            "SensitiveJsonProperties",
            &mut self.sensitive_json_properties,
        );
        Ok(())
    }
}

/// What HTTP protocols attach and redact. The last four fields are the
/// [`JsonDiagnosticOptions`] ones.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KitHttpAttachmentOptions {
    /// Attach each request's body (default true).
    pub capture_request_bodies: bool,
    /// Attach each response (default true).
    pub capture_responses: bool,
    /// Attach each shape asserted (default true).
    pub capture_expected_shapes: bool,
    /// Headers redacted, compared case-insensitively.
    pub sensitive_headers: Vec<String>,
    /// Query parameters redacted in URLs, compared case-insensitively.
    pub sensitive_query_parameters: Vec<String>,
    /// Redact sensitive data (default true). User-info in URLs is removed regardless.
    pub redact_sensitive_data: bool,
    /// Redact credentials known by their form (default true): see
    /// [`JsonDiagnosticOptions::redact_credential_forms`].
    pub redact_credential_forms: bool,
    /// Cap on bodies, in characters (default 65 536).
    pub max_diagnostic_body_length: usize,
    /// Property names redacted at any depth in JSON, and in other bodies.
    pub sensitive_json_properties: Vec<String>,
    configuration_section_name: String,
}

impl Default for KitHttpAttachmentOptions {
    fn default() -> Self {
        Self::for_section(HTTP_ATTACHMENTS_SECTION)
    }
}

impl KitHttpAttachmentOptions {
    /// Defaults, bound from `section` when resolved.
    pub fn for_section(section: &str) -> Self {
        let json = JsonDiagnosticOptions::default();
        KitHttpAttachmentOptions {
            capture_request_bodies: true,
            capture_responses: true,
            capture_expected_shapes: true,
            sensitive_headers: strings(&DEFAULT_SENSITIVE_HEADERS),
            sensitive_query_parameters: strings(&DEFAULT_SENSITIVE_QUERY_PARAMETERS),
            redact_sensitive_data: json.redact_sensitive_data,
            redact_credential_forms: json.redact_credential_forms,
            max_diagnostic_body_length: json.max_diagnostic_body_length,
            sensitive_json_properties: json.sensitive_json_properties,
            configuration_section_name: section.to_owned(),
        }
    }

    /// The section this instance binds from. Not bindable itself.
    pub fn configuration_section_name(&self) -> &str {
        &self.configuration_section_name
    }

    /// The JSON diagnostic options these include.
    pub fn json_diagnostics(&self) -> JsonDiagnosticOptions {
        JsonDiagnosticOptions {
            redact_sensitive_data: self.redact_sensitive_data,
            redact_credential_forms: self.redact_credential_forms,
            max_diagnostic_body_length: self.max_diagnostic_body_length,
            sensitive_json_properties: self.sensitive_json_properties.clone(),
        }
    }

    /// Binds every option from this instance's section of `configuration`.
    pub fn bind(&mut self, configuration: &Configuration) -> Result<(), ConfigError> {
        let section = configuration.section(&self.configuration_section_name);
        bind_bool(&section, "CaptureRequestBodies", &mut self.capture_request_bodies)?;
        bind_bool(&section, "CaptureResponses", &mut self.capture_responses)?;
        bind_bool(
            &section,
            "CaptureExpectedShapes",
            &mut self.capture_expected_shapes,
        )?;
        extend_list(&section, "SensitiveHeaders", &mut self.sensitive_headers);
        extend_list(
            &section,
            "SensitiveQueryParameters",
            &mut self.sensitive_query_parameters,
        );
        let mut json = self.json_diagnostics();
        json.bind(&section)?;
        self.redact_sensitive_data = json.redact_sensitive_data;
        self.redact_credential_forms = json.redact_credential_forms;
        self.max_diagnostic_body_length = json.max_diagnostic_body_length;
        self.sensitive_json_properties = json.sensitive_json_properties;
        Ok(())
    }

    /// The options of a protocol: defaults for `section` (or `Kit:Http:Attachments` when it
    /// names none), then every callback in order, then the configuration over them.
    pub fn resolve<'f>(
        section: Option<&str>,
        callbacks: impl IntoIterator<Item = &'f dyn Fn(&mut Self)>,
        configuration: &Configuration,
    ) -> Result<Self, ConfigError> {
        let mut options = Self::for_section(section.unwrap_or(HTTP_ATTACHMENTS_SECTION));
        for callback in callbacks {
            callback(&mut options);
        }
        options.bind(configuration)?;
        Ok(options)
    }
}

/// Limits on responses.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RestResponseOptions {
    /// Largest body read, in bytes (default 10 MiB); a larger one fails the request without
    /// being buffered past the limit.
    pub max_response_body_bytes: u64,
    /// Cap on bodies in failure messages, in characters (default 65 536).
    pub max_diagnostic_body_length: usize,
    /// How long a request may take, from its sending to its body's last byte, before it fails
    /// as a timeout (default [`DEFAULT_REQUEST_TIMEOUT`]; `None`: as long as it takes). A
    /// server that never answers then fails its test, where it would hang it and the run.
    /// Configured as `TimeoutSeconds` (a number; 0 for no limit). A client's own
    /// `configure(|b| b.timeout(…))` wins for that client.
    pub timeout: Option<Duration>,
    configuration_section_name: String,
}

impl Default for RestResponseOptions {
    fn default() -> Self {
        Self::for_section(HTTP_RESPONSES_SECTION)
    }
}

impl RestResponseOptions {
    /// Defaults, bound from `section` when resolved.
    pub fn for_section(section: &str) -> Self {
        RestResponseOptions {
            max_response_body_bytes: DEFAULT_MAX_RESPONSE_BODY_BYTES,
            max_diagnostic_body_length: DEFAULT_MAX_DIAGNOSTIC_BODY_LENGTH,
            timeout: Some(DEFAULT_REQUEST_TIMEOUT),
            configuration_section_name: section.to_owned(),
        }
    }

    /// The section this instance binds from. Not bindable itself.
    pub fn configuration_section_name(&self) -> &str {
        &self.configuration_section_name
    }

    /// Binds `MaxResponseBodyBytes`, `MaxDiagnosticBodyLength` and `TimeoutSeconds` from this
    /// instance's section.
    pub fn bind(&mut self, configuration: &Configuration) -> Result<(), ConfigError> {
        let section = configuration.section(&self.configuration_section_name);
        bind_number(
            &section,
            "MaxResponseBodyBytes",
            &mut self.max_response_body_bytes,
        )?;
        bind_number(
            &section,
            "MaxDiagnosticBodyLength",
            &mut self.max_diagnostic_body_length,
        )?;
        if let Some(Seconds(timeout)) =
            section.get_parsed("TimeoutSeconds", "a number of seconds (0 for no limit)")?
        {
            self.timeout = timeout;
        }
        Ok(())
    }

    /// The options of a protocol: defaults for `section` (or `Kit:Http:Responses`), then the
    /// first registered callback only (registering response options is first-wins), then the
    /// configuration over them.
    pub fn resolve<'f>(
        section: Option<&str>,
        callbacks: impl IntoIterator<Item = &'f dyn Fn(&mut Self)>,
        configuration: &Configuration,
    ) -> Result<Self, ConfigError> {
        let mut options = Self::for_section(section.unwrap_or(HTTP_RESPONSES_SECTION));
        if let Some(first) = callbacks.into_iter().next() {
            first(&mut options);
        }
        options.bind(configuration)?;
        Ok(options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Configuration {
        let mut c = Configuration::new();
        for (k, v) in pairs {
            c.set(*k, *v);
        }
        c
    }

    #[test]
    fn defaults_are_the_specs() {
        let o = KitHttpAttachmentOptions::default();
        assert!(
            o.capture_request_bodies
                && o.capture_responses
                && o.capture_expected_shapes
                && o.redact_sensitive_data
                && o.redact_credential_forms
        );
        assert_eq!(o.max_diagnostic_body_length, 65_536);
        assert_eq!(o.sensitive_headers.len(), 5);
        assert_eq!(o.sensitive_query_parameters.len(), 14);
        assert_eq!(o.sensitive_json_properties.len(), 13);
        assert!(o.sensitive_query_parameters.contains(&"key".to_owned()));
        assert!(!o.sensitive_json_properties.contains(&"key".to_owned()));
        assert_eq!(o.configuration_section_name(), "Kit:Http:Attachments");
        let r = RestResponseOptions::default();
        assert_eq!(
            (r.max_response_body_bytes, r.max_diagnostic_body_length),
            (10_485_760, 65_536)
        );
    }

    #[test]
    fn callbacks_run_in_registration_order_then_configuration_wins() {
        let first: &dyn Fn(&mut KitHttpAttachmentOptions) = &|o| o.max_diagnostic_body_length = 10;
        let second: &dyn Fn(&mut KitHttpAttachmentOptions) = &|o| o.max_diagnostic_body_length *= 3;
        let off: &dyn Fn(&mut KitHttpAttachmentOptions) = &|o| o.capture_request_bodies = false;
        let o = KitHttpAttachmentOptions::resolve(
            Some("Kit:Rest:Attachments"),
            [first, second, off],
            &Configuration::new(),
        )
        .unwrap();
        assert_eq!(o.max_diagnostic_body_length, 30);
        assert!(!o.capture_request_bodies);
        let c = config(&[
            ("Kit:Rest:Attachments:MaxDiagnosticBodyLength", "99"),
            ("kit:rest:attachments:capturerequestbodies", "TRUE"),
        ]);
        let o = KitHttpAttachmentOptions::resolve(Some("Kit:Rest:Attachments"), [first, second, off], &c)
            .unwrap();
        assert_eq!(o.max_diagnostic_body_length, 99);
        assert!(o.capture_request_bodies);
    }

    #[test]
    fn a_protocol_that_names_no_section_binds_from_kit_http() {
        let c = config(&[
            ("Kit:Http:Attachments:CaptureResponses", "false"),
            ("Kit:Http:Responses:MaxResponseBodyBytes", "1024"),
            ("Kit:Rest:Attachments:CaptureResponses", "true"),
        ]);
        let o = KitHttpAttachmentOptions::resolve(None, [], &c).unwrap();
        assert!(!o.capture_responses);
        assert_eq!(o.configuration_section_name(), "Kit:Http:Attachments");
        let r = RestResponseOptions::resolve(None, [], &c).unwrap();
        assert_eq!(r.max_response_body_bytes, 1024);
        // REST names its own sections and does not read Kit:Http.
        let rest = KitHttpAttachmentOptions::resolve(Some("Kit:Rest:Attachments"), [], &c).unwrap();
        assert!(rest.capture_responses);
        let rest = RestResponseOptions::resolve(Some("Kit:Rest:Responses"), [], &c).unwrap();
        assert_eq!(rest.max_response_body_bytes, DEFAULT_MAX_RESPONSE_BODY_BYTES);
    }

    #[test]
    fn credential_forms_are_switched_in_the_section_and_reach_json_diagnostics() {
        let c = config(&[("Kit:Rest:Attachments:RedactCredentialForms", "false")]);
        let o = KitHttpAttachmentOptions::resolve(Some("Kit:Rest:Attachments"), [], &c).unwrap();
        assert!(!o.redact_credential_forms && o.redact_sensitive_data);
        assert!(!o.json_diagnostics().redact_credential_forms);
        let bad = config(&[("Kit:Rest:Attachments:RedactCredentialForms", "nope")]);
        let error = KitHttpAttachmentOptions::resolve(Some("Kit:Rest:Attachments"), [], &bad)
            .unwrap_err()
            .to_string();
        assert!(error.contains("RedactCredentialForms"), "{error}");
    }

    #[test]
    fn response_options_are_first_wins() {
        let first: &dyn Fn(&mut RestResponseOptions) = &|o| o.max_response_body_bytes = 1;
        let second: &dyn Fn(&mut RestResponseOptions) = &|o| o.max_response_body_bytes = 2;
        let r =
            RestResponseOptions::resolve(Some("Kit:Rest:Responses"), [first, second], &Configuration::new())
                .unwrap();
        assert_eq!(r.max_response_body_bytes, 1);
        assert_eq!(r.configuration_section_name(), "Kit:Rest:Responses");
    }

    #[test]
    fn configured_lists_add_to_the_defaults_and_the_section_name_is_not_bindable() {
        let c = config(&[
            ("Kit:Rest:Attachments:SensitiveJsonProperties:0", "ssn"),
            ("Kit:Rest:Attachments:SensitiveJsonProperties:1", "PASSWORD"),
            ("Kit:Rest:Attachments:ConfigurationSectionName", "Elsewhere"),
        ]);
        let o = KitHttpAttachmentOptions::resolve(Some("Kit:Rest:Attachments"), [], &c).unwrap();
        assert_eq!(o.sensitive_json_properties.len(), 14);
        assert_eq!(
            o.sensitive_json_properties.last().map(String::as_str),
            Some("ssn")
        );
        assert_eq!(o.configuration_section_name(), "Kit:Rest:Attachments");
    }

    #[test]
    fn the_timeout_is_100_seconds_unless_configured_and_0_is_none() {
        assert_eq!(
            RestResponseOptions::default().timeout,
            Some(Duration::from_secs(100))
        );
        let resolve = |value: &str| {
            RestResponseOptions::resolve(
                Some("Kit:Rest:Responses"),
                [],
                &config(&[("Kit:Rest:Responses:TimeoutSeconds", value)]),
            )
        };
        assert_eq!(resolve("2.5").unwrap().timeout, Some(Duration::from_millis(2500)));
        assert_eq!(resolve(" 30 ").unwrap().timeout, Some(Duration::from_secs(30)));
        assert_eq!(resolve("0").unwrap().timeout, None);
        assert_eq!(resolve("0.0").unwrap().timeout, None);
        // Only 0 is no limit: a time too short to count is still a limit.
        assert_eq!(resolve("1e-12").unwrap().timeout, Some(Duration::ZERO));
        for bad in ["-1", "soon", "NaN", "inf", "1e30"] {
            let err = resolve(bad).unwrap_err().to_string();
            assert!(
                err.contains("Kit:Rest:Responses:TimeoutSeconds")
                    && err.contains("a number of seconds (0 for no limit)"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn a_bad_value_names_its_key() {
        let c = config(&[("Kit:Rest:Responses:MaxResponseBodyBytes", "lots")]);
        let err = RestResponseOptions::resolve(Some("Kit:Rest:Responses"), [], &c)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("Kit:Rest:Responses:MaxResponseBodyBytes") && err.contains("lots"),
            "{err}"
        );
    }
}
