//! The services a server runs, by method id, with the worker pool of their background
//! handlers and the server's metrics: what every event loop of a server shares.

use crate::id::IdMap;
use std::sync::Arc;

use crate::metrics::Metrics;
use crate::service::{MethodInfo, Mode, Service};
use crate::workers::Workers;

/// A method registered twice, or a worker pool that could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServicesError {
    /// Two methods share an id (the frame kind of their calls).
    #[error("method `{path}` has the same id ({id}) as `{other}`")]
    DuplicateMethod {
        /// The method added last.
        path: &'static str,
        /// The other method.
        other: &'static str,
        /// Their id.
        id: u16,
    },
    /// The worker threads could not be spawned.
    #[error("starting the worker pool: {0}")]
    Workers(std::io::Error),
}

pub(crate) struct Entry {
    pub(crate) service: Arc<dyn Service>,
    pub(crate) info: MethodInfo,
    /// Where the method's metrics are ([`Metrics::method_at`]): found once, when the services
    /// are built, not per call.
    pub(crate) metrics: usize,
}

pub(crate) struct Inner {
    pub(crate) methods: IdMap<u16, Entry>,
    pub(crate) workers: Option<Workers>,
    pub(crate) metrics: Arc<Metrics>,
}

/// The services of one server: cheap to clone (shared by its loops).
#[derive(Clone)]
pub struct Services(pub(crate) Arc<Inner>);

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut paths: Vec<&str> = self.0.methods.values().map(|e| e.info.path).collect();
        paths.sort_unstable();
        f.debug_struct("Services")
            .field("methods", &paths)
            .finish_non_exhaustive()
    }
}

/// Builds [`Services`].
pub struct ServicesBuilder {
    methods: IdMap<u16, (Arc<dyn Service>, MethodInfo)>,
    workers: usize,
}

impl Default for ServicesBuilder {
    fn default() -> ServicesBuilder {
        ServicesBuilder {
            methods: Default::default(),
            workers: 2,
        }
    }
}

impl Services {
    /// No services yet; background handlers get 2 worker threads unless told otherwise.
    pub fn builder() -> ServicesBuilder {
        ServicesBuilder::default()
    }

    /// No services: what a client-only loop has.
    pub fn none() -> Services {
        Services(Arc::new(Inner {
            methods: Default::default(),
            workers: None,
            metrics: Arc::new(Metrics::new(&[])),
        }))
    }

    /// The server's metrics.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.0.metrics
    }

    pub(crate) fn method(&self, id: u16) -> Option<&Entry> {
        self.0.methods.get(&id)
    }

    /// Stops the worker pool (after the jobs queued), for shutdown.
    pub(crate) fn stop_workers(&self) {
        if let Some(w) = &self.0.workers {
            w.stop();
        }
    }
}

impl ServicesBuilder {
    /// Adds a service (generated: `EchoServer::new(my_impl)`).
    pub fn service(mut self, service: impl Service) -> Result<ServicesBuilder, ServicesError> {
        let service: Arc<dyn Service> = Arc::new(service);
        for info in service.methods() {
            if let Some((_, other)) = self.methods.get(&info.id) {
                return Err(ServicesError::DuplicateMethod {
                    path: info.path,
                    other: other.path,
                    id: info.id,
                });
            }
            self.methods.insert(info.id, (Arc::clone(&service), info));
        }
        Ok(self)
    }

    /// Worker threads for background handlers (default 2; none are started if no method is
    /// background).
    pub fn workers(mut self, n: usize) -> ServicesBuilder {
        self.workers = n;
        self
    }

    /// The services, with their worker pool started.
    pub fn build(self) -> Result<Services, ServicesError> {
        let background = self
            .methods
            .values()
            .any(|(_, info)| info.mode == Mode::Background);
        let workers = if background && self.workers > 0 {
            Some(Workers::new(self.workers).map_err(ServicesError::Workers)?)
        } else {
            None
        };
        let mut paths: Vec<(&str, u16)> = self
            .methods
            .values()
            .map(|(_, info)| (info.path, info.id))
            .collect();
        paths.sort_unstable();
        let metrics = Arc::new(Metrics::new(&paths));
        let methods = self
            .methods
            .into_iter()
            .map(|(id, (service, info))| {
                let metrics = metrics.method_index(id).expect("every method has its metrics");
                (
                    id,
                    Entry {
                        service,
                        info,
                        metrics,
                    },
                )
            })
            .collect();
        Ok(Services(Arc::new(Inner {
            metrics,
            methods,
            workers,
        })))
    }
}
