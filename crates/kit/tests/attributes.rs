//! The attributes as users write them: bindings on tests and modules, in either order.

use kit::prelude::*;

#[kit::host]
fn host(kit: &mut KitBuilder) {
    for application in ["orders", "payments"] {
        kit.add_application(application, |app| {
            app.add_rest(|rest| {
                rest.add_client().base_url("http://127.0.0.1:9/");
            });
        });
    }
}

#[application("orders")]
mod bound {
    use super::*;

    #[kit::test]
    async fn a_test_inherits_its_modules_application(ctx: KitExecutionContext) {
        assert_eq!(ctx.application(), Some("orders"));
        assert_eq!(ctx.test_name(), "bound::a_test_inherits_its_modules_application");
    }

    #[kit::test]
    #[application("payments")]
    async fn a_tests_own_application_wins(ctx: KitExecutionContext) {
        assert_eq!(ctx.application(), Some("payments"));
    }

    mod nested {
        use super::*;

        #[kit::test]
        async fn nested_modules_inherit_too(ctx: KitExecutionContext) {
            assert_eq!(ctx.application(), Some("orders"));
        }
    }
}

#[application("payments", "Rest:Default")]
#[kit::test]
async fn application_above_the_test_attribute_binds_app_and_client(ctx: KitExecutionContext) {
    assert_eq!(ctx.application(), Some("payments"));
    assert_eq!(ctx.client_binding(), Some("Rest:Default"));
}

#[kit::test]
async fn an_unbound_test_has_no_application(ctx: KitExecutionContext) {
    assert_eq!(ctx.application(), None);
    assert_eq!(ctx.test_name(), "an_unbound_test_has_no_application");
}

#[kit::test]
async fn a_test_may_take_no_context() {}

#[kit::test]
async fn a_test_may_return_ok(_ctx: KitExecutionContext) -> Result<(), std::io::Error> {
    Ok(())
}

#[kit::test]
#[requires_capability(Protocol, "REST")]
async fn a_met_requirement_runs(ctx: KitExecutionContext) {
    assert!(ctx.host().has_capability(&Capability::protocol("REST")));
}

#[kit::test]
#[should_panic(expected = "the test returned Err")]
async fn an_err_fails_the_test(_ctx: KitExecutionContext) -> Result<(), String> {
    Err("nope".into())
}

#[kit::test]
#[ignore = "ignored tests are left to libtest"]
async fn an_ignored_test_is_not_run(_ctx: KitExecutionContext) {
    panic!("ignored tests must not run");
}
