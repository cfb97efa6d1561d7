//! The kit's attributes. Use them through the `kit` crate: `#[kit::test]`, `#[kit::host]`,
//! and `#[application]` / `#[requires_capability]` from `kit::prelude`.
//!
//! The expansions refer to `::kit::__private`, so a crate using these attributes depends on
//! `kit`.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, Item, ItemFn, ItemMod, LitStr, Token, parse_macro_input};

fn last_segment(attr: &Attribute) -> Option<String> {
    attr.path().segments.last().map(|s| s.ident.to_string())
}

/// `#[kit::test]`.
fn is_test_attribute(attr: &Attribute) -> bool {
    let path = attr.path();
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    matches!(segments.as_slice(), [kit, test] if kit == "kit" && test == "test")
}

/// Arguments of `#[application("orders")]` / `#[application("orders", "Rest:payments")]`.
struct ApplicationArgs {
    application: LitStr,
    client: Option<LitStr>,
}

impl Parse for ApplicationArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let application: LitStr = input.parse()?;
        let client = if input.peek(Token![,]) {
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                None
            } else {
                Some(input.parse()?)
            }
        } else {
            None
        };
        if !input.is_empty() {
            return Err(
                input.error("expected #[application(\"app\")] or #[application(\"app\", \"Rest:client\")]")
            );
        }
        if application.value().is_empty() {
            return Err(syn::Error::new(
                application.span(),
                "the application name is empty",
            ));
        }
        Ok(ApplicationArgs { application, client })
    }
}

/// Arguments of `#[auth(Bearer)]`: an authentication kind's name.
struct AuthArgs {
    kind: Ident,
}

impl Parse for AuthArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let kind: Ident = input.parse()?;
        if !input.is_empty() {
            return Err(input.error("expected #[auth(Kind)], e.g. #[auth(Bearer)]"));
        }
        Ok(AuthArgs { kind })
    }
}

/// Arguments of `#[requires_capability(Protocol, "REST")]`.
struct CapabilityArgs {
    kind: Ident,
    name: LitStr,
}

impl Parse for CapabilityArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let kind: Ident = input.parse()?;
        if kind != "Protocol" {
            return Err(syn::Error::new(kind.span(), "the capability kinds are: Protocol"));
        }
        input.parse::<Token![,]>()?;
        let name: LitStr = input.parse()?;
        if !input.is_empty() {
            return Err(input.error("expected #[requires_capability(Protocol, \"REST\")]"));
        }
        Ok(CapabilityArgs { kind, name })
    }
}

/// Marks an `async fn(ctx: KitExecutionContext)` as a kit test.
///
/// It becomes a `#[test]` that starts the test in the kit (a durable start in the trace),
/// runs the body on a current-thread tokio runtime, records the outcome (a panic or an `Err`
/// is `Failed` with its message), makes the test's events durable in the archive before
/// returning, and prints `Passed <test_name>` (or `Failed` / `Skipped`) straight to stdout,
/// where plain `cargo test` shows it. The body may return `()` or `Result<(), E: Debug>`.
///
/// `#[application(...)]` and `#[requires_capability(...)]` may follow it.
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    if !args.is_empty() {
        let args = TokenStream2::from(args);
        return syn::Error::new(
            args.span(),
            "#[kit::test] takes no arguments; use #[application(..)] below it",
        )
        .to_compile_error()
        .into();
    }
    let function = parse_macro_input!(item as ItemFn);
    expand_test(function)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

fn expand_test(mut function: ItemFn) -> syn::Result<TokenStream2> {
    let sig = &function.sig;
    if sig.asyncness.is_none() {
        return Err(syn::Error::new(
            sig.fn_token.span(),
            "#[kit::test] functions must be `async fn`",
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "#[kit::test] functions cannot be generic",
        ));
    }
    if sig.inputs.len() > 1 {
        return Err(syn::Error::new(
            sig.inputs.span(),
            "#[kit::test] functions take one argument, `ctx: KitExecutionContext`, or none",
        ));
    }
    if let Some(FnArg::Receiver(r)) = sig.inputs.first() {
        return Err(syn::Error::new(
            r.span(),
            "#[kit::test] functions cannot take `self`",
        ));
    }

    let mut application = None;
    let mut auth = None;
    let mut requires = Vec::new();
    let mut kept = Vec::new();
    for attr in std::mem::take(&mut function.attrs) {
        match last_segment(&attr).as_deref() {
            Some("application") => {
                if application.is_some() {
                    return Err(syn::Error::new(attr.span(), "a test is bound to one application"));
                }
                application = Some(attr.parse_args::<ApplicationArgs>()?);
            }
            Some("requires_capability") => requires.push(attr.parse_args::<CapabilityArgs>()?),
            Some("auth") => {
                if auth.is_some() {
                    return Err(syn::Error::new(attr.span(), "a test has one authentication kind"));
                }
                auth = Some(attr.parse_args::<AuthArgs>()?.kind.to_string());
            }
            Some("test") if is_test_attribute(&attr) => {
                return Err(syn::Error::new(attr.span(), "#[kit::test] is applied twice"));
            }
            _ => kept.push(attr),
        }
    }

    let name = function.sig.ident.clone();
    let name_text = name.to_string();
    let vis = function.vis.clone();
    let body_ident = format_ident!("__kit_test_body");
    let mut inner = function;
    inner.sig.ident = body_ident.clone();
    inner.vis = syn::Visibility::Inherited;
    // Attributes such as #[ignore] and #[should_panic] belong to the #[test] function; doc
    // comments and lint settings too, which do no harm there.
    let outer_attrs = kept;

    let (app, client) = match &application {
        Some(ApplicationArgs { application, client }) => {
            let client = match client {
                Some(c) => quote!(::core::option::Option::Some(#c)),
                None => quote!(::core::option::Option::None),
            };
            (quote!(::core::option::Option::Some(#application)), client)
        }
        None => (
            quote!(::core::option::Option::None),
            quote!(::core::option::Option::None),
        ),
    };
    let auth = match auth {
        Some(kind) => quote!(::core::option::Option::Some(#kind)),
        None => quote!(::core::option::Option::None),
    };
    let requirements = requires.iter().map(|CapabilityArgs { kind, name }| {
        quote!(::kit::__private::Requirement {
            kind: ::kit::__private::KitCapabilityKinds::#kind,
            name: #name,
        })
    });
    let call = if inner.sig.inputs.is_empty() {
        quote!(|_ctx| #body_ident())
    } else {
        quote!(#body_ident)
    };
    Ok(quote! {
        #[::core::prelude::v1::test]
        #(#outer_attrs)*
        #vis fn #name() {
            #inner
            static SPEC: ::kit::__private::TestSpec = ::kit::__private::TestSpec {
                name: #name_text,
                module_path: ::core::module_path!(),
                file: ::core::file!(),
                line: ::core::line!(),
                manifest_dir: ::core::env!("CARGO_MANIFEST_DIR"),
                application: #app,
                client: #client,
                auth: #auth,
                requires: &[#(#requirements),*],
            };
            ::kit::__private::run_test(&SPEC, #call)
        }
    })
}

/// Marks the function that builds this test binary's host: `fn host(kit: &mut KitBuilder)`.
///
/// One per test binary. Tests anywhere in the binary use the host it builds; a binary with
/// none gets a host built from configuration alone.
#[proc_macro_attribute]
pub fn host(args: TokenStream, item: TokenStream) -> TokenStream {
    if !args.is_empty() {
        let args = TokenStream2::from(args);
        return syn::Error::new(args.span(), "#[kit::host] takes no arguments")
            .to_compile_error()
            .into();
    }
    let function = parse_macro_input!(item as ItemFn);
    if function.sig.asyncness.is_some() || function.sig.inputs.len() != 1 {
        return syn::Error::new(
            function.sig.span(),
            "#[kit::host] goes on `fn host(kit: &mut KitBuilder)`: not async, one argument",
        )
        .to_compile_error()
        .into();
    }
    let name = &function.sig.ident;
    let name_text = name.to_string();
    let registration = format_ident!("__KIT_HOST_{}", name_text.to_uppercase());
    quote! {
        #function

        #[::kit::__private::linkme::distributed_slice(::kit::__private::HOSTS)]
        #[linkme(crate = ::kit::__private::linkme)]
        #[doc(hidden)]
        static #registration: ::kit::__private::HostFn = ::kit::__private::HostFn {
            build: #name,
            name: ::core::concat!(::core::module_path!(), "::", #name_text),
        };
    }
    .into()
}

/// Binds a test, or every test in an inline module, to an application:
/// `#[application("orders")]`, or `#[application("orders", "Rest:payments")]` to also pick the
/// REST client. A test's own binding wins over its module's.
#[proc_macro_attribute]
pub fn application(args: TokenStream, item: TokenStream) -> TokenStream {
    propagate::<ApplicationArgs>("application", args.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Authenticates every request of a test, or of every test in an inline module, with the kind
/// named (`#[auth(Bearer)]`), its credentials taken from
/// `Kit:Applications:{app}:Auth:{Kind}:…` in configuration. A request's `.auth(…)` wins over
/// it, a test's over its module's, and it wins over the application's default;
/// `.without_auth()` beats all.
#[proc_macro_attribute]
pub fn auth(args: TokenStream, item: TokenStream) -> TokenStream {
    propagate::<AuthArgs>("auth", args.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Skips the test (reporting it `Skipped` with the reason) when the host lacks a capability:
/// `#[requires_capability(Protocol, "REST")]`. On a test or an inline module.
#[proc_macro_attribute]
pub fn requires_capability(args: TokenStream, item: TokenStream) -> TokenStream {
    propagate::<CapabilityArgs>("requires_capability", args.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Places `#[name(args)]` where `#[kit::test]` reads it: right after the test attribute of a
/// function, or after that of every test in a module (recursively), unless the test or a
/// nested module has its own.
fn propagate<Args: Parse>(name: &str, args: TokenStream2, item: TokenStream2) -> syn::Result<TokenStream2> {
    syn::parse2::<Args>(args.clone())?;
    let attr_ident = Ident::new(name, Span::call_site());
    let marker: Attribute = syn::parse_quote!(#[::kit::#attr_ident(#args)]);
    match syn::parse2::<Item>(item)? {
        Item::Fn(function) => place_on_fn(function, &marker, name, true).map(|f| quote!(#f)),
        Item::Mod(module) => place_on_mod(module, &marker, name).map(|m| quote!(#m)),
        other => Err(syn::Error::new(
            other.span(),
            format!("#[{name}] goes on a #[kit::test] function or an inline module"),
        )),
    }
}

fn place_on_fn(mut function: ItemFn, marker: &Attribute, name: &str, explicit: bool) -> syn::Result<ItemFn> {
    let Some(at) = function.attrs.iter().position(is_test_attribute) else {
        if explicit {
            return Err(syn::Error::new(
                function.sig.ident.span(),
                format!("#[{name}] goes on a #[kit::test] function (put it above or below #[kit::test])"),
            ));
        }
        return Ok(function);
    };
    let has_own = function
        .attrs
        .iter()
        .any(|a| last_segment(a).as_deref() == Some(name));
    // A test's own #[application] or #[auth] wins over its module's; requirements accumulate.
    if !(has_own && (name == "application" || name == "auth")) {
        function.attrs.insert(at + 1, marker.clone());
    }
    Ok(function)
}

fn place_on_mod(mut module: ItemMod, marker: &Attribute, name: &str) -> syn::Result<ItemMod> {
    let Some((_, items)) = module.content.as_mut() else {
        return Err(syn::Error::new(
            module.span(),
            format!("#[{name}] works on inline modules (`mod m {{ … }}`), not on `mod m;`"),
        ));
    };
    for item in std::mem::take(items) {
        let item = match item {
            Item::Fn(f) => Item::Fn(place_on_fn(f, marker, name, false)?),
            Item::Mod(m) if m.content.is_some() => {
                let has_own = m.attrs.iter().any(|a| last_segment(a).as_deref() == Some(name));
                if has_own && (name == "application" || name == "auth") {
                    Item::Mod(m)
                } else {
                    Item::Mod(place_on_mod(m, marker, name)?)
                }
            }
            other => other,
        };
        items.push(item);
    }
    Ok(module)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_error(source: &str) -> String {
        let function: ItemFn = syn::parse_str(source).unwrap();
        expand_test(function).unwrap_err().to_string()
    }

    fn propagate_error(name: &str, args: &str, item: &str) -> String {
        let args: TokenStream2 = args.parse().unwrap();
        let item: TokenStream2 = item.parse().unwrap();
        let result = match name {
            "application" => propagate::<ApplicationArgs>(name, args, item),
            "auth" => propagate::<AuthArgs>(name, args, item),
            _ => propagate::<CapabilityArgs>(name, args, item),
        };
        result.unwrap_err().to_string()
    }

    #[::core::prelude::v1::test]
    fn a_test_must_be_an_async_fn_of_at_most_one_argument() {
        assert_eq!(
            test_error("fn t(ctx: Ctx) {}"),
            "#[kit::test] functions must be `async fn`"
        );
        assert_eq!(
            test_error("async fn t<T>(ctx: T) {}"),
            "#[kit::test] functions cannot be generic"
        );
        assert!(test_error("async fn t(a: A, b: B) {}").contains("take one argument"));
    }

    #[::core::prelude::v1::test]
    fn bindings_are_checked() {
        assert_eq!(
            test_error(r#"#[application("a")] #[application("b")] async fn t() {}"#),
            "a test is bound to one application"
        );
        assert_eq!(
            test_error(r#"#[application("")] async fn t() {}"#),
            "the application name is empty"
        );
        assert_eq!(
            test_error(r#"#[requires_capability(Database, "x")] async fn t() {}"#),
            "the capability kinds are: Protocol"
        );
    }

    #[::core::prelude::v1::test]
    fn auth_takes_one_kind_and_a_tests_own_wins_over_its_modules() {
        assert_eq!(
            test_error(r#"#[auth(Bearer)] #[auth(Basic)] async fn t() {}"#),
            "a test has one authentication kind"
        );
        assert!(propagate_error("auth", "Bearer, Basic", "mod m {}").contains("expected #[auth(Kind)]"));
        let item: TokenStream2 =
            "mod m { #[kit::test] async fn a() {} #[kit::test] #[auth(ApiKey)] async fn b() {} }"
                .parse()
                .unwrap();
        let out = propagate::<AuthArgs>("auth", "Bearer".parse().unwrap(), item)
            .unwrap()
            .to_string();
        assert_eq!(out.matches("auth (Bearer)").count(), 1, "{out}");
        assert_eq!(out.matches("auth (ApiKey)").count(), 1, "{out}");
    }

    #[::core::prelude::v1::test]
    fn module_attributes_need_a_test_or_an_inline_module() {
        assert_eq!(
            propagate_error("application", r#""orders""#, "struct S;"),
            "#[application] goes on a #[kit::test] function or an inline module"
        );
        assert!(
            propagate_error("application", r#""orders""#, "async fn t() {}")
                .contains("goes on a #[kit::test] function")
        );
        assert!(propagate_error("application", r#""orders""#, "mod m;").contains("inline modules"));
        assert!(propagate_error("application", "orders", "mod m {}").contains("expected string literal"));
    }

    #[::core::prelude::v1::test]
    fn a_module_binding_reaches_nested_tests_but_not_those_with_their_own() {
        let item: TokenStream2 = r#"mod m {
            #[kit::test] async fn a() {}
            #[kit::test] #[application("other")] async fn b() {}
            mod inner { #[kit::test] async fn c() {} }
            fn helper() {}
        }"#
        .parse()
        .unwrap();
        let out = propagate::<ApplicationArgs>("application", r#""orders""#.parse().unwrap(), item)
            .unwrap()
            .to_string();
        assert_eq!(out.matches("application (\"orders\")").count(), 2, "{out}");
        assert_eq!(out.matches("application (\"other\")").count(), 1, "{out}");
    }
}
