//! The description table (the DPU paper's Accelerator Description Table, section V-B): what a
//! host tells the engine about its services, validated before the engine routes a call by it.
//!
//! The host sends it once per session, as the answer to `ferry.offload.Host/Describe`: an
//! encoded `FileDescriptorSet` (every file its services need, imports included), the services
//! it offers, and every method's path and Ferry method id. The engine builds its decoders and
//! encoders from the descriptors at run time ([`ferry_reflect::Schema`]), so a new service needs
//! no recompilation of the engine. The table is peer input: [`Table::from_description`] checks
//! it entirely (limits, every name resolved, ids unique) and names what is wrong.

use std::collections::HashMap;
use std::sync::Arc;

use ferry::rpc::Shape;
use ferry_reflect::Schema;
use prost_reflect::{DescriptorPool, MessageDescriptor};

use crate::generated::ferry::offload::DescriptionView;

/// Largest encoded descriptor set accepted from a host.
pub const MAX_DESCRIPTORS: usize = 16 << 20;
/// Most services a table may list.
pub const MAX_SERVICES: usize = 256;
/// Most methods a table may list.
pub const MAX_METHODS: usize = 4096;
/// Most files a descriptor set may hold.
pub const MAX_FILES: usize = 4096;
/// Most imports a descriptor set's public imports may stand for, counted over its files (each
/// file sees, besides its own imports, what they publicly import: see `flatten_imports`).
pub const MAX_FLATTENED_IMPORTS: usize = 1 << 16;

/// What is wrong with a host's description table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TableError {
    /// A field of the `Description` message does not decode.
    #[error("description field {field}: {reason}")]
    Field {
        /// The field.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// More than a limit allows.
    #[error("{what}: {found} exceeds the limit of {max}")]
    Limit {
        /// What was counted.
        what: &'static str,
        /// How many there were.
        found: usize,
        /// The limit.
        max: usize,
    },
    /// The descriptor set does not decode or does not resolve.
    #[error("descriptor set: {0}")]
    Descriptors(String),
    /// A listed service is not in the descriptor set.
    #[error("service {0} is not in the descriptor set")]
    UnknownService(String),
    /// A method path that does not name a method of a listed service.
    #[error("method {path}: {reason}")]
    Method {
        /// The path as listed.
        path: String,
        /// Why it is refused.
        reason: String,
    },
    /// Two methods with one path or one id.
    #[error("method {path}: {what} {value} listed twice")]
    Duplicate {
        /// The second method's path.
        path: String,
        /// `path` or `id`.
        what: &'static str,
        /// The repeated value.
        value: String,
    },
}

/// How the engine calls one method: its Ferry method id and its message types.
#[derive(Debug, Clone)]
pub struct Route {
    /// `/package.Service/Method`.
    pub path: String,
    /// The Ferry method id the host serves it under.
    pub id: u16,
    /// The request's protobuf descriptor.
    pub input: MessageDescriptor,
    /// The response's protobuf descriptor.
    pub output: MessageDescriptor,
    /// Unary, or which side streams (the method's `stream` keywords in its `.proto`).
    pub shape: Shape,
}

/// A validated description table: the schemas and a route per method.
pub struct Table {
    schema: Schema,
    routes: HashMap<String, Arc<Route>>,
    services: Vec<String>,
    descriptors: Vec<u8>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("services", &self.services)
            .field("methods", &self.routes.len())
            .finish_non_exhaustive()
    }
}

impl PartialEq for Table {
    /// The same descriptors, services and routes (paths and ids): what a host that reconnects
    /// must present again.
    fn eq(&self, other: &Table) -> bool {
        self.descriptors == other.descriptors
            && self.services == other.services
            && self.routes.len() == other.routes.len()
            && self
                .routes
                .iter()
                .all(|(p, r)| other.routes.get(p).is_some_and(|o| o.id == r.id))
    }
}

impl Table {
    /// Validates a host's `Description`.
    pub fn from_description(d: &DescriptionView<'_>) -> Result<Table, TableError> {
        let descriptors = d.file_descriptor_set();
        limit("descriptor set bytes", descriptors.len(), MAX_DESCRIPTORS)?;
        let services_list = d.services();
        limit("services", services_list.len(), MAX_SERVICES)?;
        let mut services = Vec::with_capacity(services_list.len());
        for s in services_list.iter() {
            let s = std::str::from_utf8(s).map_err(|e| TableError::Field {
                field: "services",
                reason: e.to_string(),
            })?;
            services.push(s.to_string());
        }
        let mut methods = Vec::new();
        for m in d.methods() {
            limit("methods", methods.len() + 1, MAX_METHODS)?;
            let path = m.path().map_err(|e| TableError::Field {
                field: "methods.path",
                reason: e.to_string(),
            })?;
            methods.push((path.to_string(), m.id()));
        }
        Table::new(descriptors.to_vec(), services, &methods)
    }

    /// Builds a table from its parts (what [`from_description`](Self::from_description) read).
    pub fn new(
        descriptors: Vec<u8>,
        services: Vec<String>,
        methods: &[(String, u32)],
    ) -> Result<Table, TableError> {
        limit("descriptor set bytes", descriptors.len(), MAX_DESCRIPTORS)?;
        limit("services", services.len(), MAX_SERVICES)?;
        limit("methods", methods.len(), MAX_METHODS)?;
        let pool = decode_descriptors(&descriptors)?;
        for s in &services {
            if pool.get_service_by_name(s).is_none() {
                return Err(TableError::UnknownService(s.clone()));
            }
        }
        let mut routes = HashMap::with_capacity(methods.len());
        let mut ids = HashMap::with_capacity(methods.len());
        for (path, id) in methods {
            let route = route(&pool, &services, path, *id)?;
            if let Some(first) = ids.insert(route.id, path.clone()) {
                return Err(TableError::Duplicate {
                    path: path.clone(),
                    what: "id",
                    value: format!("{} (also {first})", route.id),
                });
            }
            if routes.insert(path.clone(), Arc::new(route)).is_some() {
                return Err(TableError::Duplicate {
                    path: path.clone(),
                    what: "path",
                    value: path.clone(),
                });
            }
        }
        let schema = Schema::new(pool).map_err(|e| TableError::Descriptors(e.to_string()))?;
        Ok(Table {
            schema,
            routes,
            services,
            descriptors,
        })
    }

    /// The route of a gRPC path (`/package.Service/Method`).
    pub fn route(&self, path: &str) -> Option<&Arc<Route>> {
        self.routes.get(path)
    }

    /// Every route.
    pub fn routes(&self) -> impl Iterator<Item = &Route> {
        self.routes.values().map(|r| &**r)
    }

    /// The schemas (Ferry descriptors of every message).
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The services the host offers, by full name.
    pub fn services(&self) -> &[String] {
        &self.services
    }

    /// The encoded descriptor set, as the host sent it (what reflection serves).
    pub fn descriptors(&self) -> &[u8] {
        &self.descriptors
    }
}

/// Decodes an encoded `FileDescriptorSet` into a pool, refusing what `prost-reflect` would
/// panic on: a file whose `syntax` is neither `proto2` nor `proto3` (its error report indexes
/// the files before that one is added; found by the `offload_table` fuzz target).
pub(crate) fn decode_descriptors(bytes: &[u8]) -> Result<DescriptorPool, TableError> {
    use prost::Message as _;
    let mut set =
        prost_types::FileDescriptorSet::decode(bytes).map_err(|e| TableError::Descriptors(e.to_string()))?;
    for file in &set.file {
        if let Some(syntax) = file
            .syntax
            .as_deref()
            .filter(|s| !matches!(*s, "proto2" | "proto3"))
        {
            return Err(TableError::Descriptors(format!(
                "file {:?}: syntax {syntax:?} (proto2 and proto3 are supported)",
                file.name()
            )));
        }
    }
    flatten_imports(&mut set)?;
    DescriptorPool::from_file_descriptor_set(set).map_err(|e| TableError::Descriptors(e.to_string()))
}

/// Checks the files' imports and makes every public import a direct one, before `prost-reflect`
/// sees them.
///
/// `prost-reflect` 0.16 walks public imports recursively, descending into the files it has
/// already seen rather than the new ones: a cycle of public imports (a file that publicly
/// imports itself will do) overflows the stack, and layers of files that publicly import each
/// other take time exponential in their depth (both found by the `offload_table` fuzz target
/// and its regression tests). So import cycles are refused, as protoc refuses them, and each
/// file is given as direct imports the files it sees through public ones (found here by a walk
/// that visits each file once), with no public import left for that walk. Which names a file
/// can use is unchanged; the bytes the host sent (what reflection serves) are not touched.
fn flatten_imports(set: &mut prost_types::FileDescriptorSet) -> Result<(), TableError> {
    let files = &mut set.file;
    limit("files in the descriptor set", files.len(), MAX_FILES)?;
    let mut index = HashMap::with_capacity(files.len());
    for (i, f) in files.iter().enumerate() {
        if index.insert(f.name(), i).is_some() {
            return Err(TableError::Descriptors(format!(
                "file {:?} is listed twice",
                f.name()
            )));
        }
    }
    // Each file's imports (and public imports) as indices; imports of files not in the set are
    // left to prost-reflect, which names them.
    let mut imports = Vec::with_capacity(files.len());
    let mut public = Vec::with_capacity(files.len());
    for f in files.iter() {
        imports.push(
            f.dependency
                .iter()
                .filter_map(|d| index.get(d.as_str()).copied())
                .collect::<Vec<_>>(),
        );
        let mut p = Vec::with_capacity(f.public_dependency.len());
        for &i in &f.public_dependency {
            let name = usize::try_from(i)
                .ok()
                .and_then(|i| f.dependency.get(i))
                .ok_or_else(|| {
                    TableError::Descriptors(format!(
                        "file {:?}: public import {i} is not one of its imports",
                        f.name()
                    ))
                })?;
            p.extend(index.get(name.as_str()).copied());
        }
        public.push(p);
    }
    if let Some(f) = find_cycle(&imports) {
        return Err(TableError::Descriptors(format!(
            "file {:?} imports itself (an import cycle)",
            files[f].name()
        )));
    }
    let mut added: Vec<Vec<usize>> = vec![Vec::new(); files.len()];
    let mut total = 0;
    for (f, direct) in imports.iter().enumerate() {
        let mut seen: std::collections::HashSet<usize> = direct.iter().copied().chain([f]).collect();
        let mut stack = direct.clone();
        while let Some(d) = stack.pop() {
            for &p in &public[d] {
                if seen.insert(p) {
                    added[f].push(p);
                    stack.push(p);
                }
            }
        }
        total += added[f].len();
        limit(
            "imports made direct from public ones",
            total,
            MAX_FLATTENED_IMPORTS,
        )?;
    }
    let names: Vec<String> = files.iter().map(|f| f.name().to_owned()).collect();
    for (f, added) in files.iter_mut().zip(added) {
        f.dependency.extend(added.into_iter().map(|i| names[i].clone()));
        f.public_dependency.clear();
    }
    Ok(())
}

/// A file on a cycle of `imports` (each file's imports, by index), if there is one: an
/// iterative depth-first search (a peer's graph may be deep).
fn find_cycle(imports: &[Vec<usize>]) -> Option<usize> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    let mut mark = vec![Mark::New; imports.len()];
    for root in 0..imports.len() {
        if mark[root] != Mark::New {
            continue;
        }
        mark[root] = Mark::OnPath;
        let mut path = vec![(root, 0)];
        while let Some((f, next)) = path.last_mut() {
            let f = *f;
            match imports[f].get(*next) {
                Some(&d) => {
                    *next += 1;
                    match mark[d] {
                        Mark::OnPath => return Some(d),
                        Mark::New => {
                            mark[d] = Mark::OnPath;
                            path.push((d, 0));
                        }
                        Mark::Done => {}
                    }
                }
                None => {
                    mark[f] = Mark::Done;
                    path.pop();
                }
            }
        }
    }
    None
}

fn limit(what: &'static str, found: usize, max: usize) -> Result<(), TableError> {
    if found > max {
        return Err(TableError::Limit { what, found, max });
    }
    Ok(())
}

/// Resolves one listed method.
fn route(pool: &DescriptorPool, services: &[String], path: &str, id: u32) -> Result<Route, TableError> {
    let refuse = |reason: &str| TableError::Method {
        path: path.to_string(),
        reason: reason.to_string(),
    };
    let (service, method) = path
        .strip_prefix('/')
        .and_then(|p| p.split_once('/'))
        .ok_or_else(|| refuse("not of the form /package.Service/Method"))?;
    if !services.iter().any(|s| s == service) {
        return Err(refuse("its service is not listed"));
    }
    let id = u16::try_from(id).map_err(|_| refuse(&format!("id {id} does not fit 16 bits")))?;
    let service = pool
        .get_service_by_name(service)
        .ok_or_else(|| refuse("no such service"))?;
    let m = service
        .methods()
        .find(|m| m.name() == method)
        .ok_or_else(|| refuse("no such method in its service"))?;
    Ok(Route {
        path: path.to_string(),
        id,
        input: m.input(),
        output: m.output(),
        shape: match (m.is_client_streaming(), m.is_server_streaming()) {
            (false, false) => Shape::Unary,
            (true, false) => Shape::ClientStreaming,
            (false, true) => Shape::ServerStreaming,
            (true, true) => Shape::Bidirectional,
        },
    })
}
