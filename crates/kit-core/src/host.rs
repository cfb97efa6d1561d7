//! The host: what a test binary registers once (applications, protocols, collectors) and
//! every test then reads.
//!
//! A test binary builds one [`Host`] with a [`KitBuilder`], usually in the function marked
//! `#[kit::host]`. Protocol crates extend the builders through extension traits (the REST
//! crate adds `add_rest`) and keep what they register in the builders' [`Extensions`], a map
//! keyed by type, so this crate needs to know nothing about them.

use std::any::{Any, TypeId};
use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use crate::collector::Collector;
use crate::config::{ConfigError, Configuration};

/// Values of any `Send + Sync` type, at most one per type.
#[derive(Default)]
pub struct Extensions {
    map: ByType<Box<dyn Any + Send + Sync>>,
}

/// A map keyed by type. A `TypeId` is a hash already: SipHashing it again for every lookup
/// (a test's REST client, settings and resolutions, several a request) cost the kit/raw
/// bench's client thread about 900 instructions a request; Fx mixes it in a multiply.
type ByType<V> = rustc_hash::FxHashMap<TypeId, V>;

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.map.len())
            .finish()
    }
}

impl Extensions {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value of type `T`, if any.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.map.get(&TypeId::of::<T>()).and_then(|b| b.downcast_ref())
    }

    /// The value of type `T`, mutably, if any.
    pub fn get_mut<T: Send + Sync + 'static>(&mut self) -> Option<&mut T> {
        self.map
            .get_mut(&TypeId::of::<T>())
            .and_then(|b| b.downcast_mut())
    }

    /// The value of type `T`, inserting `make()` first if there is none.
    pub fn get_or_insert_with<T: Send + Sync + 'static>(&mut self, make: impl FnOnce() -> T) -> &mut T {
        let slot = self
            .map
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Box::new(make()));
        match slot.downcast_mut() {
            Some(value) => value,
            // The map only ever stores a `T` under `TypeId::of::<T>()`.
            None => unreachable!("extension stored under the wrong type id"),
        }
    }

    /// Inserts `value`, returning the one it replaces.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) -> Option<T> {
        self.map
            .insert(TypeId::of::<T>(), Box::new(value))
            .and_then(|old| old.downcast().ok().map(|b| *b))
    }

    /// Removes and returns the value of type `T`.
    pub fn remove<T: Send + Sync + 'static>(&mut self) -> Option<T> {
        self.map
            .remove(&TypeId::of::<T>())
            .and_then(|old| old.downcast().ok().map(|b| *b))
    }
}

/// What kind of capability a host offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum KitCapabilityKinds {
    /// A protocol a test can speak (`REST`).
    Protocol,
}

impl fmt::Display for KitCapabilityKinds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KitCapabilityKinds::Protocol => f.write_str("Protocol"),
        }
    }
}

/// Something a host can do, that a test may require (`#[requires_capability(Protocol, "REST")]`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Capability {
    /// Its kind.
    pub kind: KitCapabilityKinds,
    /// Its name within the kind; compared case-insensitively.
    pub name: String,
}

impl Capability {
    /// A protocol capability (`Capability::protocol("REST")`).
    pub fn protocol(name: impl Into<String>) -> Self {
        Capability {
            kind: KitCapabilityKinds::Protocol,
            name: name.into(),
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind, self.name)
    }
}

/// Building the host failed: every problem found while registering, at once.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The configuration could not be loaded.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Registration found problems (a relative base URL, say).
    #[error("the kit host is misconfigured:\n{}", .0.iter().map(|e| format!("  - {e}")).collect::<Vec<_>>().join("\n"))]
    Registration(Vec<String>),
}

/// Makes a collector of one type; registering the same type twice puts one on the bus.
#[derive(Clone, Copy)]
pub struct CollectorFactory {
    type_id: TypeId,
    make: fn() -> Box<dyn Collector>,
}

impl fmt::Debug for CollectorFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CollectorFactory").finish_non_exhaustive()
    }
}

impl CollectorFactory {
    /// The factory of `C::default()`.
    pub fn of<C: Collector + Default>() -> Self {
        fn make<C: Collector + Default>() -> Box<dyn Collector> {
            Box::new(C::default())
        }
        CollectorFactory {
            type_id: TypeId::of::<C>(),
            make: make::<C>,
        }
    }
}

/// Collectors registered by type: at most one of each type goes on the bus.
#[derive(Default)]
struct TypedCollectors(Vec<CollectorFactory>);

impl TypedCollectors {
    fn add(&mut self, factory: CollectorFactory) {
        if !self.0.iter().any(|f| f.type_id == factory.type_id) {
            self.0.push(factory);
        }
    }

    fn extend(&mut self, other: TypedCollectors) {
        for factory in other.0 {
            self.add(factory);
        }
    }
}

/// What the host, or one application, registered: protocols' extensions, capabilities,
/// collectors by type, and the problems found while registering. Both builders hold one and
/// expose it through [`Registrar`].
#[derive(Default)]
pub struct Registry {
    extensions: Extensions,
    capabilities: BTreeSet<Capability>,
    collectors: TypedCollectors,
    errors: Vec<String>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("capabilities", &self.capabilities)
            .field("errors", &self.errors)
            .finish_non_exhaustive()
    }
}

/// Registration shared by [`KitBuilder`] (host-level) and [`ApplicationBuilder`]: protocol
/// crates write their extension traits once, for any `Registrar`.
pub trait Registrar {
    /// The registry being filled.
    fn registry(&self) -> &Registry;

    /// The registry being filled, mutably.
    fn registry_mut(&mut self) -> &mut Registry;

    /// Who registers, for messages: `the host`, `application 'orders'`.
    fn describe(&self) -> String;

    /// The application's name; `None` for the host.
    fn application_name(&self) -> Option<&str>;

    /// Declares a capability (protocols declare theirs when registered).
    fn add_capability(&mut self, capability: Capability) -> &mut Self
    where
        Self: Sized,
    {
        self.registry_mut().capabilities.insert(capability);
        self
    }

    /// Adds a collector of type `C`, made with `C::default()`, unless one of that type was added
    /// already (here or elsewhere in the host): collectors clients ask for go on the bus once.
    fn add_collector_type<C: Collector + Default>(&mut self) -> &mut Self
    where
        Self: Sized,
    {
        self.add_collector_factory(CollectorFactory::of::<C>())
    }

    /// Adds the collector `factory` makes, unless one of its type was added already.
    fn add_collector_factory(&mut self, factory: CollectorFactory) -> &mut Self
    where
        Self: Sized,
    {
        self.registry_mut().collectors.add(factory);
        self
    }

    /// Protocol registrations, in-process servers: values of any type, one per type.
    fn extensions(&self) -> &Extensions {
        &self.registry().extensions
    }

    /// The extensions, mutably.
    fn extensions_mut(&mut self) -> &mut Extensions {
        &mut self.registry_mut().extensions
    }

    /// Records a registration problem; [`KitBuilder::build`] reports them all at once.
    fn record_error(&mut self, message: impl Into<String>)
    where
        Self: Sized,
    {
        self.registry_mut().errors.push(message.into());
    }
}

/// Registers applications, protocols and collectors; consumed by [`KitBuilder::build`].
///
/// Registration methods shared with applications (`add_capability`, `extensions_mut`, …) come
/// from the [`Registrar`] trait.
///
/// ```
/// use kit_core::{Configuration, KitBuilder};
///
/// let mut kit = KitBuilder::new(Configuration::new());
/// kit.add_application("orders", |app| {
///     assert_eq!(app.name(), "orders");
/// });
/// let host = kit.build().unwrap().host;
/// assert!(host.application("ORDERS").is_some());
/// ```
pub struct KitBuilder {
    configuration: Configuration,
    applications: Vec<ApplicationBuilder>,
    registry: Registry,
    collectors: Vec<Box<dyn Collector>>,
}

impl fmt::Debug for KitBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KitBuilder")
            .field(
                "applications",
                &self.applications.iter().map(|a| &a.name).collect::<Vec<_>>(),
            )
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}

impl Registrar for KitBuilder {
    fn registry(&self) -> &Registry {
        &self.registry
    }
    fn registry_mut(&mut self) -> &mut Registry {
        &mut self.registry
    }
    fn describe(&self) -> String {
        "the host".to_owned()
    }
    fn application_name(&self) -> Option<&str> {
        None
    }
}

impl KitBuilder {
    /// A builder over `configuration`.
    pub fn new(configuration: Configuration) -> Self {
        KitBuilder {
            configuration,
            applications: Vec::new(),
            registry: Registry::default(),
            collectors: Vec::new(),
        }
    }

    /// The configuration the host is built over.
    pub fn configuration(&self) -> &Configuration {
        &self.configuration
    }

    /// The configuration, to change in code (the host's loader has already applied files and
    /// environment, so what is set here wins).
    pub fn configuration_mut(&mut self) -> &mut Configuration {
        &mut self.configuration
    }

    /// Registers the application `name` (or reopens it: calls with the same name, compared
    /// case-insensitively, configure one application) and configures it.
    pub fn add_application(
        &mut self,
        name: &str,
        configure: impl FnOnce(&mut ApplicationBuilder),
    ) -> &mut Self {
        let index = match self
            .applications
            .iter()
            .position(|a| a.name.eq_ignore_ascii_case(name))
        {
            Some(i) => i,
            None => {
                self.applications
                    .push(ApplicationBuilder::new(name, &self.configuration));
                self.applications.len() - 1
            }
        };
        configure(&mut self.applications[index]);
        self
    }

    /// Adds a collector to the bus.
    pub fn add_collector(&mut self, collector: impl Collector) -> &mut Self {
        self.collectors.push(Box::new(collector));
        self
    }

    /// Adds a boxed collector to the bus.
    pub fn add_boxed_collector(&mut self, collector: Box<dyn Collector>) -> &mut Self {
        self.collectors.push(collector);
        self
    }

    /// Builds the host, or reports every registration problem at once.
    pub fn build(self) -> Result<BuiltHost, BuildError> {
        let Registry {
            extensions,
            mut capabilities,
            collectors: mut typed,
            mut errors,
        } = self.registry;
        let mut applications = Vec::with_capacity(self.applications.len());
        for app in self.applications {
            errors.extend(app.registry.errors);
            capabilities.extend(app.registry.capabilities);
            typed.extend(app.registry.collectors);
            applications.push(Arc::new(Application {
                name: app.name,
                extensions: app.registry.extensions,
            }));
        }
        if !errors.is_empty() {
            return Err(BuildError::Registration(errors));
        }
        let mut collectors = self.collectors;
        collectors.extend(typed.0.into_iter().map(|f| (f.make)()));
        Ok(BuiltHost {
            host: Host {
                configuration: self.configuration,
                applications,
                extensions,
                capabilities,
                singletons: Mutex::new(ByType::default()),
            },
            collectors,
        })
    }
}

/// The result of [`KitBuilder::build`]: the host, and the collectors to put on the bus.
pub struct BuiltHost {
    /// The host.
    pub host: Host,
    /// The collectors registered while building.
    pub collectors: Vec<Box<dyn Collector>>,
}

impl fmt::Debug for BuiltHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BuiltHost")
            .field("host", &self.host)
            .field("collectors", &self.collectors.len())
            .finish()
    }
}

/// Registers one application's protocols and pieces. Registration methods come from
/// [`Registrar`].
pub struct ApplicationBuilder {
    name: String,
    registry: Registry,
    base_url: Option<String>,
}

impl fmt::Debug for ApplicationBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApplicationBuilder")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Registrar for ApplicationBuilder {
    fn registry(&self) -> &Registry {
        &self.registry
    }
    fn registry_mut(&mut self) -> &mut Registry {
        &mut self.registry
    }
    fn describe(&self) -> String {
        format!("application '{}'", self.name)
    }
    fn application_name(&self) -> Option<&str> {
        Some(&self.name)
    }
}

impl ApplicationBuilder {
    fn new(name: &str, configuration: &Configuration) -> Self {
        ApplicationBuilder {
            name: name.to_owned(),
            registry: Registry::default(),
            base_url: configuration
                .get(&format!("Kit:Applications:{name}:BaseUrl"))
                .map(str::to_owned),
        }
    }

    /// The application's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `Kit:Applications:{name}:BaseUrl` as configured, if it is.
    pub fn configured_base_url(&self) -> Option<&str> {
        self.base_url.as_deref()
    }
}

/// One registered application, as tests see it.
pub struct Application {
    name: String,
    extensions: Extensions,
}

impl fmt::Debug for Application {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Application")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Application {
    /// Its name, as first registered.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its extensions.
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }
}

/// What a test binary registered, read by every test.
pub struct Host {
    configuration: Configuration,
    applications: Vec<Arc<Application>>,
    extensions: Extensions,
    capabilities: BTreeSet<Capability>,
    singletons: Mutex<ByType<Arc<SingletonCell>>>,
}

/// One host singleton, made on first use.
type SingletonCell = OnceLock<Arc<dyn Any + Send + Sync>>;

impl fmt::Debug for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Host")
            .field("applications", &self.applications)
            .field("capabilities", &self.capabilities)
            .finish_non_exhaustive()
    }
}

impl Host {
    /// The configuration.
    pub fn configuration(&self) -> &Configuration {
        &self.configuration
    }

    /// The applications, in registration order.
    pub fn applications(&self) -> &[Arc<Application>] {
        &self.applications
    }

    /// The application called `name`, case-insensitively.
    pub fn application(&self, name: &str) -> Option<&Arc<Application>> {
        self.applications
            .iter()
            .find(|a| a.name.eq_ignore_ascii_case(name))
    }

    /// Host-level extensions.
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// Whether the host offers `capability` (names compared case-insensitively).
    pub fn has_capability(&self, capability: &Capability) -> bool {
        self.capabilities
            .iter()
            .any(|c| c.kind == capability.kind && c.name.eq_ignore_ascii_case(&capability.name))
    }

    /// Every capability the host offers.
    pub fn capabilities(&self) -> impl Iterator<Item = &Capability> {
        self.capabilities.iter()
    }

    /// The host's one value of type `T`, made by `init` the first time it is asked for (protocol
    /// crates keep what they derive from registration and configuration here, such as resolved
    /// options). Concurrent first calls make it once. `init` must not ask for a `T` itself.
    pub fn singleton<T: Send + Sync + 'static>(&self, init: impl FnOnce(&Host) -> T) -> Arc<T> {
        let cell = Arc::clone(
            self.singletons
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .entry(TypeId::of::<T>())
                .or_default(),
        );
        let value = Arc::clone(cell.get_or_init(|| Arc::new(init(self))));
        match value.downcast::<T>() {
            Ok(typed) => typed,
            // The map only ever stores a `T` under `TypeId::of::<T>()`.
            Err(_) => unreachable!("singleton stored under the wrong type id"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Clients(Vec<&'static str>);

    #[test]
    fn repeated_add_application_configures_one_application() {
        let mut kit = KitBuilder::new(Configuration::new());
        kit.add_application("orders", |app| {
            app.extensions_mut()
                .get_or_insert_with(Clients::default)
                .0
                .push("a")
        });
        kit.add_application("Orders", |app| {
            app.extensions_mut()
                .get_or_insert_with(Clients::default)
                .0
                .push("b");
            app.add_capability(Capability::protocol("REST"));
        });
        let host = kit.build().unwrap().host;
        assert_eq!(host.applications().len(), 1);
        let app = host.application("orders").unwrap();
        assert_eq!(app.name(), "orders");
        assert_eq!(app.extensions().get::<Clients>().unwrap().0, vec!["a", "b"]);
        assert!(host.has_capability(&Capability::protocol("rest")));
        assert!(!host.has_capability(&Capability::protocol("gRPC")));
    }

    #[derive(Default)]
    struct Counter;
    impl Collector for Counter {
        fn on_event(&mut self, _: &crate::Event) {}
    }

    #[test]
    fn a_collector_type_asked_for_twice_goes_on_the_bus_once() {
        let mut kit = KitBuilder::new(Configuration::new());
        kit.add_collector_type::<Counter>();
        kit.add_application("a", |app| {
            app.add_collector_type::<Counter>();
        });
        kit.add_application("b", |app| {
            app.add_collector_type::<Counter>();
        });
        assert_eq!(kit.build().unwrap().collectors.len(), 1);
    }

    #[test]
    fn a_singleton_is_made_once_however_many_threads_ask() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let host = KitBuilder::new(Configuration::new()).build().unwrap().host;
        let made = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    let v = host.singleton(|_| {
                        made.fetch_add(1, Ordering::SeqCst);
                        String::from("options")
                    });
                    assert_eq!(*v, "options");
                });
            }
        });
        assert_eq!(made.load(Ordering::SeqCst), 1);
        assert_eq!(*host.singleton(|_| 5u32), 5);
    }

    #[test]
    fn build_reports_every_registration_problem_at_once() {
        let mut kit = KitBuilder::new(Configuration::new());
        kit.record_error("first");
        kit.add_application("a", |app| app.record_error("second"));
        let err = kit.build().unwrap_err().to_string();
        assert!(err.contains("  - first\n  - second"), "{err}");
    }

    #[test]
    fn the_configured_base_url_is_visible_while_registering() {
        let mut config = Configuration::new();
        config.set("Kit:Applications:orders:BaseUrl", "http://x/");
        let mut kit = KitBuilder::new(config);
        kit.add_application("ORDERS", |app| {
            assert_eq!(app.configured_base_url(), Some("http://x/"))
        });
    }

    #[test]
    fn extensions_hold_one_value_per_type() {
        let mut ext = Extensions::new();
        assert_eq!(format!("{ext:?}"), "Extensions { len: 0 }");
        assert_eq!(ext.insert(1u32), None);
        assert_eq!(ext.insert(2u32), Some(1));
        assert_eq!(ext.insert("text"), None);
        assert_eq!(format!("{ext:?}"), "Extensions { len: 2 }");
        *ext.get_mut::<u32>().unwrap() += 40;
        assert_eq!(ext.get::<u32>(), Some(&42));
        assert_eq!(ext.get_mut::<u64>(), None);
        assert_eq!(ext.remove::<u32>(), Some(42));
        assert_eq!(ext.remove::<u32>(), None);
        assert_eq!(ext.get::<&str>(), Some(&"text"));
    }

    #[test]
    fn capabilities_show_as_kind_and_name() {
        let rest = Capability::protocol("REST");
        assert_eq!(rest.to_string(), "Protocol:REST");
        assert_eq!(KitCapabilityKinds::Protocol.to_string(), "Protocol");
    }

    #[test]
    fn registrars_describe_themselves_and_fill_their_own_registry() {
        let mut config = Configuration::new();
        config.set("Kit:Rest:Timeout", "5");
        let mut kit = KitBuilder::new(config);
        assert_eq!(
            (kit.describe(), kit.application_name()),
            ("the host".to_owned(), None)
        );
        assert_eq!(kit.configuration().get("kit:rest:timeout"), Some("5"));
        kit.configuration_mut().set("Kit:Rest:Timeout", "9");
        kit.extensions_mut().insert(7u8);
        assert_eq!(kit.extensions().get::<u8>(), Some(&7));
        kit.add_capability(Capability::protocol("REST"));
        assert!(
            kit.registry()
                .capabilities
                .contains(&Capability::protocol("REST"))
        );
        kit.add_application("orders", |app| {
            assert_eq!(app.name(), "orders");
            assert_eq!(app.describe(), "application 'orders'");
            assert_eq!(format!("{app:?}"), r#"ApplicationBuilder { name: "orders", .. }"#);
            assert_eq!(app.application_name(), Some("orders"));
            app.extensions_mut().insert(1u16);
            assert_eq!(app.extensions().get::<u16>(), Some(&1));
            app.add_capability(Capability::protocol("gRPC"));
            assert_eq!(app.registry().capabilities.len(), 1);
        });
        let debug = format!("{kit:?}");
        assert_eq!(
            debug,
            r#"KitBuilder { applications: ["orders"], registry: Registry { capabilities: {Capability { kind: Protocol, name: "REST" }}, errors: [], .. }, .. }"#
        );

        let built = kit.build().unwrap();
        assert_eq!(
            format!("{built:?}"),
            r#"BuiltHost { host: Host { applications: [Application { name: "orders", .. }], capabilities: {Capability { kind: Protocol, name: "REST" }, Capability { kind: Protocol, name: "gRPC" }}, .. }, collectors: 0 }"#
        );
        let host = built.host;
        assert_eq!(host.configuration().get("Kit:Rest:Timeout"), Some("9"));
        assert_eq!(host.extensions().get::<u8>(), Some(&7));
        assert_eq!(host.extensions().get::<u16>(), None, "the application's own");
        assert_eq!(
            host.application("orders").unwrap().extensions().get::<u16>(),
            Some(&1)
        );
        let names: Vec<String> = host.capabilities().map(ToString::to_string).collect();
        assert_eq!(names, ["Protocol:REST", "Protocol:gRPC"]);
    }

    #[test]
    fn a_collector_type_asked_for_only_by_an_application_goes_on_the_bus() {
        let mut kit = KitBuilder::new(Configuration::new());
        assert_eq!(
            format!("{:?}", CollectorFactory::of::<Counter>()),
            "CollectorFactory { .. }"
        );
        kit.add_application("a", |app| {
            app.add_collector_type::<Counter>();
        });
        kit.add_collector(Counter);
        assert_eq!(
            kit.build().unwrap().collectors.len(),
            2,
            "the typed one and the added one"
        );
    }
}
