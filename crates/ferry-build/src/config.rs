//! The build-script interface: [`Config`] and [`compile_protos`], shaped like `prost-build`.

use std::path::{Path, PathBuf};

use prost_reflect::DescriptorPool;
use quote::quote;

use crate::BuildError;
use crate::codegen;

/// One `service` as the [`ServiceGenerator`] sees it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Service {
    /// Name in the `.proto` file, e.g. `KvStore`.
    pub name: String,
    /// Fully qualified name, e.g. `ferry.kv.KvStore`.
    pub full_name: String,
    /// The package.
    pub package: String,
    /// The `.proto` file that declares it, as named to the compiler (for error messages).
    pub file: String,
    /// 1-based line of the `service` in [`file`](Self::file), 0 when unknown.
    pub line: u32,
    /// The generated description module, e.g. `kv_store_service`.
    pub module: String,
    /// Names for the Rust items of the service, free in the package module.
    pub rust: ServiceNames,
    /// Path of the runtime crate in generated code, as configured with
    /// [`Config::runtime_crate`] (default `::ferry`).
    pub runtime: String,
    /// Leading comment in the `.proto` file.
    pub comments: String,
    /// Methods in declaration order.
    pub methods: Vec<Method>,
}

/// Names for the Rust items of one service (what the built-in [`RpcGenerator`] emits), chosen
/// once for the whole build: none is taken by a message, enum, view, module or another
/// service of the package. When the `.proto` names collide, all six get the same number
/// (`Echo2`, `Echo2Server`, `AsyncEcho2`, ...).
///
/// [`RpcGenerator`]: crate::RpcGenerator
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServiceNames {
    /// The synchronous server trait, e.g. `Echo`.
    pub server_trait: String,
    /// Its wrapper that implements `ferry::rpc::Service`, e.g. `EchoServer`.
    pub server: String,
    /// The async server trait, e.g. `AsyncEcho`.
    pub async_server_trait: String,
    /// Its wrapper that implements `ferry::rpc::tokio::AsyncService`, e.g. `AsyncEchoServer`.
    pub async_server: String,
    /// The client stub, e.g. `EchoClient`.
    pub client: String,
    /// The tonic-style server trait, e.g. `TonicEcho` (generated only with
    /// [`RpcGenerator::tonic_style`](crate::RpcGenerator::tonic_style)).
    pub tonic_trait: String,
}

/// One `rpc` of a [`Service`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Method {
    /// Name in the `.proto` file, e.g. `Get`.
    pub name: String,
    /// `/package.Service/Method`: what the id is derived from.
    pub path: String,
    /// Method id, the frame kind of its calls: `ferry_transport::method_id` of
    /// `/package.Service/Method` (stable under reordering; unique in a build).
    pub id: u16,
    /// 1-based line of the `rpc` in the service's file, 0 when unknown.
    pub line: u32,
    /// The Rust function name, as written (`get`; `r#type` for a keyword), unique in the
    /// service and never `new`, `inner` or `into_inner` (the client stub's own methods).
    pub rust_name: String,
    /// The method id constant in the description module, e.g. `GET` for
    /// `kv_store_service::GET` (never `NAME` or `METHODS`).
    pub id_const: String,
    /// Fully qualified request type.
    pub input_type: String,
    /// Fully qualified response type.
    pub output_type: String,
    /// Rust path of the request struct, relative to the service's package module (where
    /// generated service code is placed), e.g. `GetRequest` or `super::common::Key`.
    pub input_rust_type: String,
    /// Rust path of the response struct, relative to the service's package module.
    pub output_rust_type: String,
    /// Rust path of the request's view struct (`GetRequestView`), relative to the package module.
    pub input_rust_view: String,
    /// Rust path of the response's view struct, relative to the package module.
    pub output_rust_view: String,
    /// `stream` request.
    pub client_streaming: bool,
    /// `stream` response.
    pub server_streaming: bool,
    /// Leading comment in the `.proto` file.
    pub comments: String,
}

/// Adds code for each service (server traits, client stubs), like prost-build's hook.
///
/// [`Config::new`] installs the built-in [`RpcGenerator`](crate::RpcGenerator) (Ferry RPC's
/// traits and stubs); [`Config::service_generator`] replaces it and
/// [`Config::no_service_generator`] removes it.
pub trait ServiceGenerator {
    /// Fails the build if this generator cannot generate `service` (default: accepts every
    /// service). Called for every service before any code is generated for it; the error
    /// should name the file and line ([`Service::file`], [`Method::line`]).
    fn check(&self, service: &Service) -> Result<(), BuildError> {
        let _ = service;
        Ok(())
    }

    /// Appends Rust source for `service` to `buf`; it is placed in the service's package module,
    /// after the service's description module.
    fn generate(&mut self, service: &Service, buf: &mut String);
}

/// How to compile `.proto` files.
pub struct Config {
    out_dir: Option<PathBuf>,
    file_per_package: bool,
    file_name: String,
    runtime: String,
    service_generator: Option<Box<dyn ServiceGenerator>>,
    descriptor_set: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config::new()
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("out_dir", &self.out_dir)
            .field("file_per_package", &self.file_per_package)
            .field("file_name", &self.file_name)
            .field("runtime", &self.runtime)
            .field("service_generator", &self.service_generator.is_some())
            .field("descriptor_set", &self.descriptor_set)
            .finish_non_exhaustive()
    }
}

/// A generated file: its name (relative to the output directory) and contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    /// File name, e.g. `ferry_protos.rs` or `ferry.kv.rs`.
    pub name: String,
    /// Formatted Rust source, with the `@generated` header.
    pub contents: String,
}

/// The header of every generated file.
pub const HEADER: &str = "// @generated by ferry-build. Do not edit.\n";

impl Config {
    /// Defaults: output to `$OUT_DIR`, one file `ferry_protos.rs` holding every package as
    /// nested modules (`pub mod ferry { pub mod kv { ... } }`), runtime crate `::ferry`, and
    /// the built-in [`RpcGenerator`](crate::RpcGenerator) for services (server traits and
    /// client stubs for `ferry::rpc`, which needs `ferry`'s `rpc` feature; streaming methods
    /// fail the build).
    pub fn new() -> Self {
        Config {
            out_dir: None,
            file_per_package: false,
            file_name: "ferry_protos.rs".into(),
            runtime: "::ferry".into(),
            service_generator: Some(Box::new(crate::RpcGenerator::new())),
            descriptor_set: None,
        }
    }

    /// Also writes the schemas as an encoded `google.protobuf.FileDescriptorSet` (every file,
    /// imports included) to `path` (relative paths are under the output directory), as
    /// prost-build's option of the same name does: what a service hands to an offload engine
    /// or a reflection service at run time
    /// (`include_bytes!(concat!(env!("OUT_DIR"), "/descriptors.bin"))`).
    pub fn file_descriptor_set_path(&mut self, path: impl Into<PathBuf>) -> &mut Self {
        self.descriptor_set = Some(path.into());
        self
    }

    /// Where to write (default `$OUT_DIR`).
    pub fn out_dir(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// One file per package, `<package>.rs` (`_.rs` for no package), to be mounted by the user
    /// at the module path of the package, as with prost-build. Types of other packages are
    /// referred to by relative (`super::`) paths.
    pub fn file_per_package(&mut self, yes: bool) -> &mut Self {
        self.file_per_package = yes;
        self
    }

    /// Name of the single output file (default `ferry_protos.rs`); ignored with
    /// [`Config::file_per_package`].
    pub fn file_name(&mut self, name: impl Into<String>) -> &mut Self {
        self.file_name = name.into();
        self
    }

    /// Path of the runtime crate in generated code (default `::ferry`; it must re-export
    /// `wire` and `SharedBuf` as `ferry` does, and `rpc` for the built-in service generator).
    pub fn runtime_crate(&mut self, path: impl Into<String>) -> &mut Self {
        self.runtime = path.into();
        self
    }

    /// Replaces the built-in [`RpcGenerator`](crate::RpcGenerator): `g` adds the code for
    /// every service (wrap an `RpcGenerator` in `g` to add to its output rather than replace it).
    pub fn service_generator(&mut self, g: Box<dyn ServiceGenerator>) -> &mut Self {
        self.service_generator = Some(g);
        self
    }

    /// No code for services beyond their description modules (name, methods, method ids):
    /// no server traits, no client stubs, so the generated code needs only `ferry`'s wire
    /// runtime (`default-features = false`), and streaming methods are described, not refused.
    pub fn no_service_generator(&mut self) -> &mut Self {
        self.service_generator = None;
        self
    }

    /// Loads, generates and writes (only files whose contents changed); for `build.rs`, also
    /// tells cargo to rerun when a `.proto` changes.
    pub fn compile_protos(
        &mut self,
        protos: &[impl AsRef<Path>],
        includes: &[impl AsRef<Path>],
    ) -> Result<(), BuildError> {
        let pool = crate::load(protos, includes)?;
        let files = self.generate(&pool)?;
        let dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => std::env::var_os("OUT_DIR").map(PathBuf::from).ok_or_else(|| {
                BuildError::Codegen("OUT_DIR is not set: call from build.rs or set Config::out_dir".into())
            })?,
        };
        if std::env::var_os("CARGO").is_some() && std::env::var_os("OUT_DIR").is_some() {
            for p in protos {
                println!("cargo:rerun-if-changed={}", p.as_ref().display());
            }
            for i in includes {
                println!("cargo:rerun-if-changed={}", i.as_ref().display());
            }
        }
        if let Some(path) = &self.descriptor_set {
            let path = dir.join(path);
            let bytes = pool.encode_to_vec();
            if std::fs::read(&path).ok().as_deref() != Some(&bytes[..]) {
                std::fs::write(&path, bytes).map_err(|source| BuildError::Io {
                    path: path.display().to_string(),
                    source,
                })?;
            }
        }
        write_files(&dir, &files)
    }

    /// Generates code for every file of `pool` (no writing): what `compile_protos` writes and
    /// what `ferry gen` uses.
    pub fn generate(&mut self, pool: &DescriptorPool) -> Result<Vec<GeneratedFile>, BuildError> {
        let runtime: proc_macro2::TokenStream = self
            .runtime
            .parse()
            .map_err(|e| BuildError::Codegen(format!("runtime crate path `{}`: {e}", self.runtime)))?;
        let ctx = codegen::Context::new(pool, runtime)?;
        let packages = codegen::generate(&ctx, &mut self.service_generator)?;
        if self.file_per_package {
            packages
                .into_iter()
                .map(|p| {
                    let name = if p.package.is_empty() {
                        "_.rs".to_string()
                    } else {
                        format!("{}.rs", p.package)
                    };
                    Ok(GeneratedFile {
                        contents: render(&p.tokens, &name)?,
                        name,
                    })
                })
                .collect()
        } else {
            let tokens = nest(&packages, &[]);
            Ok(vec![GeneratedFile {
                contents: render(&tokens, &self.file_name)?,
                name: self.file_name.clone(),
            }])
        }
    }
}

/// Packages as nested modules, starting at module path `at`.
fn nest(packages: &[codegen::PackageCode], at: &[String]) -> proc_macro2::TokenStream {
    let mut out = proc_macro2::TokenStream::new();
    for p in packages.iter().filter(|p| p.module == at) {
        out.extend(p.tokens.clone());
    }
    let mut children: Vec<&String> = packages
        .iter()
        .filter(|p| p.module.len() > at.len() && p.module.starts_with(at))
        .map(|p| &p.module[at.len()])
        .collect();
    children.sort();
    children.dedup();
    for c in children {
        let mut sub = at.to_vec();
        sub.push(c.clone());
        let inner = nest(packages, &sub);
        let name = codegen::module_ident(c);
        let docline = format!(" Package `{}`.", sub.join("."));
        out.extend(quote! {
            #[doc = #docline]
            pub mod #name {
                #inner
            }
        });
    }
    out
}

fn render(tokens: &proc_macro2::TokenStream, name: &str) -> Result<String, BuildError> {
    let file: syn::File = syn::parse2(tokens.clone())
        .map_err(|e| BuildError::Codegen(format!("{name}: generated code does not parse: {e}")))?;
    Ok(format!("{HEADER}\n{}", prettyplease::unparse(&file)))
}

/// Writes each file unless it already has exactly these contents (keeps cargo from rebuilding).
pub fn write_files(dir: &Path, files: &[GeneratedFile]) -> Result<(), BuildError> {
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| BuildError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    for f in files {
        let path = dir.join(&f.name);
        if std::fs::read(&path).ok().as_deref() == Some(f.contents.as_bytes()) {
            continue;
        }
        std::fs::write(&path, &f.contents).map_err(io(&path))?;
    }
    Ok(())
}

/// Compiles `protos` (searching imports in `includes`) into `$OUT_DIR/ferry_protos.rs`.
///
/// ```no_run
/// // build.rs
/// fn main() -> Result<(), ferry_build::BuildError> {
///     ferry_build::compile_protos(&["proto/kv.proto"], &["proto/"])
/// }
/// ```
///
/// and in the crate, every package as nested modules (`pub mod ferry { pub mod kv { .. } }`):
/// `include!(concat!(env!("OUT_DIR"), "/ferry_protos.rs"));`
pub fn compile_protos(protos: &[impl AsRef<Path>], includes: &[impl AsRef<Path>]) -> Result<(), BuildError> {
    Config::new().compile_protos(protos, includes)
}
