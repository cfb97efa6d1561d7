//! `#[auth]` on modules and tests, as users write it, against an in-process server that says
//! which kind reached it.

use kit::prelude::*;

fn whoami() -> axum::Router {
    axum::Router::new().route(
        "/whoami",
        axum::routing::get(|headers: axum::http::HeaderMap| async move {
            let authorization = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            match (authorization.split(' ').next(), headers.get("x-api-key")) {
                (Some(scheme), _) if !scheme.is_empty() => scheme.to_owned(),
                (_, Some(_)) => "ApiKey".to_owned(),
                _ => "anonymous".to_owned(),
            }
        }),
    )
}

#[kit::host]
fn host(kit: &mut KitBuilder) {
    // Credentials from configuration, as CI would inject them.
    let config = kit.configuration_mut();
    config.set("Kit:Applications:api:Auth:Bearer:Token", "bearer-from-config-1");
    config.set("Kit:Applications:api:Auth:ApiKey:Key", "key-from-config-123");
    kit.add_application("api", |app| {
        app.add_in_process_server(whoami);
        app.add_rest(|rest| {
            rest.default_auth(Basic::new("ada", "default-password-1"));
            rest.add_client();
        });
    });
}

async fn kind(ctx: &KitExecutionContext) -> String {
    ctx.rest().get("/whoami").await.content().to_owned()
}

#[kit::test]
#[application("api")]
async fn the_application_default_applies_when_nothing_else_does(ctx: KitExecutionContext) {
    assert_eq!(kind(&ctx).await, "Basic");
}

#[auth(Bearer)]
#[application("api")]
mod bearer_module {
    use super::*;

    #[kit::test]
    async fn a_modules_kind_wins_over_the_application_default(ctx: KitExecutionContext) {
        assert_eq!(ctx.auth_kind(), Some("Bearer"));
        assert_eq!(kind(&ctx).await, "Bearer");
    }

    #[kit::test]
    #[auth(ApiKey)]
    async fn a_tests_kind_wins_over_its_modules(ctx: KitExecutionContext) {
        assert_eq!(kind(&ctx).await, "ApiKey");
    }

    #[kit::test]
    async fn a_requests_kind_wins_over_the_tests(ctx: KitExecutionContext) {
        let response = ctx
            .rest()
            .auth(ApiKey::header("X-Api-Key", "key-in-code-456"))
            .get("/whoami")
            .await;
        assert_eq!(response.content(), "ApiKey");
    }

    #[kit::test]
    async fn without_auth_beats_everything(ctx: KitExecutionContext) {
        assert_eq!(
            ctx.rest().without_auth().get("/whoami").await.content(),
            "anonymous"
        );
    }
}
