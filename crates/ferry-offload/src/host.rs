//! The host's side: what a Ferry service adds to be served through the engine.
//!
//! A host serves its `.proto` services with the generated Ferry server traits, unchanged, on a
//! `ferry::rpc::Server` listening on a shared-memory address, and adds one more service,
//! [`describe`]'s `ferry.offload.Host`, which answers the engine's `Describe` with the
//! description table (its schemas and method ids) and its `Ping` heartbeats. Ferry clients
//! call the same server directly; the engine is one more client.
//!
//! ```no_run
//! use ferry::rpc::{Server, Services};
//! use ferry_offload::demo::DemoServer;
//! use ferry_offload::demo_host::DemoHost;
//!
//! let services = Services::builder()
//!     .service(DemoServer::new(DemoHost))? // the generated trait, implemented as always
//!     .service(ferry_offload::host::describe(ferry_offload::DEMO_DESCRIPTORS, &["ferry.offload.demo.Demo"])?)?
//!     .build()?;
//! let server = Server::builder(services).listen("shm:///tmp/demo.sock").start()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use ferry::Context;
use ferry::rpc::tokio::{AsyncCall, AsyncRequest};
use ferry::rpc::{Call, Code, Encoded, Status};

use crate::generated::ferry::offload as proto;
use crate::table::{Table, TableError};

/// The engine protocol's version this crate speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// The `ferry.offload.Host` service of a host: add it to the host's `ferry::rpc::Services`.
pub type HostService = proto::HostServer<Describe>;

/// The same service for a host served by `ferry::rpc::tokio::AsyncServer`: add it to its
/// `AsyncServices`.
pub type AsyncHostService = proto::AsyncHostServer<Describe>;

/// Answers `Describe` with a fixed table, and `Ping`.
#[derive(Debug)]
pub struct Describe {
    descriptors: Vec<u8>,
    services: Vec<String>,
    methods: Vec<(String, u32)>,
}

/// The host service offering `services` (full names) whose schemas are in `descriptors` (an
/// encoded `FileDescriptorSet`, imports included: what `ferry_build::Config::
/// file_descriptor_set_path` writes). Every method of those services is offered under its Ferry
/// method id (`ferry::transport::method_id` of its path, the id the generated server registers).
/// The table is validated here, as the engine will validate it.
pub fn describe(descriptors: &[u8], services: &[&str]) -> Result<HostService, TableError> {
    Describe::new(descriptors, services).map(proto::HostServer::new)
}

/// [`describe`] for a host served by `ferry::rpc::tokio::AsyncServer`.
pub fn describe_async(descriptors: &[u8], services: &[&str]) -> Result<AsyncHostService, TableError> {
    Describe::new(descriptors, services).map(proto::AsyncHostServer::new)
}

impl Describe {
    fn new(descriptors: &[u8], services: &[&str]) -> Result<Describe, TableError> {
        let pool = crate::table::decode_descriptors(descriptors)?;
        let mut methods = Vec::new();
        for name in services {
            let service = pool
                .get_service_by_name(name)
                .ok_or_else(|| TableError::UnknownService(name.to_string()))?;
            for m in service.methods() {
                let path = format!("/{}/{}", service.full_name(), m.name());
                let id = ferry::transport::method_id(&path);
                methods.push((path, u32::from(id)));
            }
        }
        let services: Vec<String> = services.iter().map(|s| s.to_string()).collect();
        Table::new(descriptors.to_vec(), services.clone(), &methods)?;
        Ok(Describe {
            descriptors: descriptors.to_vec(),
            services,
            methods,
        })
    }

    /// The answer to `Describe` from an engine speaking `version`.
    fn description<'a>(&self, ctx: &'a Context, version: u32) -> Result<proto::Description<'a>, Status> {
        if version != PROTOCOL_VERSION {
            return Err(Status::new(
                Code::FailedPrecondition,
                format!(
                    "the engine speaks version {}, this host {PROTOCOL_VERSION}",
                    version
                ),
            ));
        }
        let mut d = proto::Description::new(ctx);
        d.set_file_descriptor_set(self.descriptors.clone());
        for s in &self.services {
            d.append_services(s.clone());
        }
        for (path, id) in &self.methods {
            let mut m = proto::Method::new(ctx);
            m.set_path(path.clone());
            m.set_id(*id);
            d.append_methods(m);
        }
        Ok(d)
    }
}

impl proto::Host for Describe {
    fn describe<'a>(
        &self,
        call: &Call<'a>,
        request: proto::DescribeRequestView<'a>,
    ) -> Result<proto::Description<'a>, Status> {
        self.description(call.ctx(), request.version())
    }

    fn ping<'a>(
        &self,
        call: &Call<'a>,
        request: proto::HeartbeatView<'a>,
    ) -> Result<proto::Heartbeat<'a>, Status> {
        let mut h = proto::Heartbeat::new(call.ctx());
        h.set_sequence(request.sequence());
        Ok(h)
    }
}

impl proto::AsyncHost for Describe {
    async fn describe(
        &self,
        call: AsyncCall,
        request: AsyncRequest<proto::DescribeRequest<'static>>,
    ) -> Result<Encoded, Status> {
        Encoded::message(&self.description(call.ctx(), request.view()?.version())?)
    }

    async fn ping(
        &self,
        call: AsyncCall,
        request: AsyncRequest<proto::Heartbeat<'static>>,
    ) -> Result<Encoded, Status> {
        let mut h = proto::Heartbeat::new(call.ctx());
        h.set_sequence(request.view()?.sequence());
        Encoded::message(&h)
    }
}
