//! The code generator: a shared context (names and paths of every type in the descriptor pool),
//! then one generator per package that emits tokens, then `prettyplease`.
//!
//! Naming is decided once, for the whole pool, before any code is emitted, so that every
//! reference to a type (from its own package or another one) agrees with its definition.

mod docs;
mod enums;
mod message;
mod names;
mod rpc;
mod service;

pub use rpc::RpcGenerator;

use std::collections::{BTreeMap, HashMap};

use proc_macro2::TokenStream;
use prost_reflect::{DescriptorPool, EnumDescriptor, FileDescriptor, MessageDescriptor};
use quote::quote;

use crate::BuildError;
use crate::config::{ServiceGenerator, ServiceNames};
pub(crate) use docs::SourceInfo;
use ferry_reflect::SchemaError;
use names::{Scope, camel, ident, shouty, snake};

/// Where a message type lives and what its generated items are called.
#[derive(Debug, Clone)]
pub(crate) struct MessageNames {
    /// Module path (from the generated root) of the module that holds the type.
    pub module: Vec<String>,
    /// The struct (absent for map entries).
    pub name: String,
    /// The view struct.
    pub view: String,
    /// The `MessageDesc` static.
    pub desc: String,
    /// The module of nested items, if the message needs one.
    pub nested: Option<String>,
    /// Oneof enum names, by oneof index (synthetic oneofs have none).
    pub oneofs: HashMap<usize, String>,
}

/// Where an enum lives.
#[derive(Debug, Clone)]
pub(crate) struct EnumNames {
    pub name: String,
}

/// Facts about the whole pool that every generator needs.
pub(crate) struct Context<'c> {
    pub pool: &'c DescriptorPool,
    pub messages: HashMap<String, MessageNames>,
    pub enums: HashMap<String, EnumNames>,
    /// Service module names, by full service name.
    pub services: HashMap<String, String>,
    /// Names of the Rust items generated for a service, by full service name.
    pub service_names: HashMap<String, ServiceNames>,
    pub sources: HashMap<String, SourceInfo>,
    /// Path of the runtime crate, e.g. `::ferry`.
    pub runtime: TokenStream,
}

/// One package's generated code.
pub(crate) struct PackageCode {
    /// Module path of the package (`a.b` is `["a", "b"]`; empty for no package).
    pub module: Vec<String>,
    /// Dotted package name.
    pub package: String,
    pub tokens: TokenStream,
}

fn package_module(package: &str) -> Vec<String> {
    if package.is_empty() {
        Vec::new()
    } else {
        package.split('.').map(snake).collect()
    }
}

/// Files grouped by package, packages and files in name order (deterministic output).
fn packages(pool: &DescriptorPool) -> BTreeMap<String, Vec<FileDescriptor>> {
    let mut by: BTreeMap<String, Vec<FileDescriptor>> = BTreeMap::new();
    for f in pool.files() {
        by.entry(f.package_name().to_string()).or_default().push(f);
    }
    for files in by.values_mut() {
        files.sort_by(|a, b| a.name().cmp(b.name()));
    }
    by
}

/// Names every message, enum and service of the pool, and rejects what Ferry cannot generate.
impl<'c> Context<'c> {
    pub(crate) fn new(pool: &'c DescriptorPool, runtime: TokenStream) -> Result<Self, BuildError> {
        let mut ctx = Context {
            pool,
            messages: HashMap::new(),
            enums: HashMap::new(),
            services: HashMap::new(),
            service_names: HashMap::new(),
            sources: HashMap::new(),
            runtime,
        };
        for f in pool.files() {
            ctx.sources
                .insert(f.name().to_string(), SourceInfo::new(f.file_descriptor_proto()));
        }
        let pkgs = packages(pool);
        let all_modules: Vec<Vec<String>> = pkgs.keys().map(|p| package_module(p)).collect();
        for (package, files) in &pkgs {
            let module = package_module(package);
            for f in files {
                ctx.check_file(f)?;
            }
            // Child package modules live in this module's type namespace.
            let mut types = Scope::default();
            for m in &all_modules {
                if m.len() == module.len() + 1 && m.starts_with(&module) {
                    types.reserve(&m[module.len()]);
                }
            }
            let mut values = Scope::default();
            let messages: Vec<MessageDescriptor> = files.iter().flat_map(|f| f.messages()).collect();
            let enums: Vec<EnumDescriptor> = files.iter().flat_map(|f| f.enums()).collect();
            ctx.name_scope(&module, &messages, &enums, &mut types, &mut values);
            for f in files {
                for s in f.services() {
                    let name = types.claim(&format!("{}_service", snake(s.name())), "_");
                    ctx.services.insert(s.full_name().to_string(), name);
                }
            }
            // After every other item of the package, so that a message keeps its name and
            // the service's items are numbered instead.
            for f in files {
                for s in f.services() {
                    let stem = camel(s.name()).trim_end_matches('_').to_string();
                    let stem = types.claim_set(&stem, "", |b| service_items(b).to_vec());
                    let [
                        server_trait,
                        server,
                        async_server_trait,
                        async_server,
                        client,
                        tonic_trait,
                    ] = service_items(&stem);
                    ctx.service_names.insert(
                        s.full_name().to_string(),
                        ServiceNames {
                            server_trait,
                            server,
                            async_server_trait,
                            async_server,
                            client,
                            tonic_trait,
                        },
                    );
                }
            }
        }
        Ok(ctx)
    }

    fn name_scope(
        &mut self,
        module: &[String],
        messages: &[MessageDescriptor],
        enums: &[EnumDescriptor],
        types: &mut Scope,
        values: &mut Scope,
    ) {
        let messages: Vec<&MessageDescriptor> = messages.iter().filter(|m| !m.is_map_entry()).collect();
        let mut names = Vec::new();
        for m in &messages {
            names.push(types.claim(&camel(m.name()), ""));
        }
        for e in enums {
            let name = types.claim(&camel(e.name()), "");
            self.enums.insert(e.full_name().to_string(), EnumNames { name });
        }
        let views: Vec<String> = names
            .iter()
            .map(|n| types.claim(&format!("{}View", n.trim_end_matches('_')), ""))
            .collect();
        let nested: Vec<Option<String>> = messages
            .iter()
            .zip(&names)
            .map(|(m, n)| needs_module(m).then(|| types.claim(&snake(n), "_")))
            .collect();
        let descs: Vec<String> = names
            .iter()
            .map(|n| values.claim(&format!("{}_DESC", shouty(n)), "_"))
            .collect();
        for (i, m) in messages.iter().enumerate() {
            let mut info = MessageNames {
                module: module.to_vec(),
                name: names[i].clone(),
                view: views[i].clone(),
                desc: descs[i].clone(),
                nested: nested[i].clone(),
                oneofs: HashMap::new(),
            };
            if let Some(sub) = &nested[i] {
                let mut inner = module.to_vec();
                inner.push(sub.clone());
                let mut t = Scope::default();
                let mut v = Scope::default();
                let children: Vec<MessageDescriptor> = m.child_messages().collect();
                let child_enums: Vec<EnumDescriptor> = m.child_enums().collect();
                self.name_scope(&inner, &children, &child_enums, &mut t, &mut v);
                for o in m.oneofs().filter(|o| !o.is_synthetic()) {
                    let name = t.claim(&camel(o.name()), "");
                    info.oneofs.insert(oneof_index(&o), name);
                }
                for entry in children.iter().filter(|c| c.is_map_entry()) {
                    let desc = v.claim(&format!("{}_DESC", shouty(entry.name())), "_");
                    self.messages.insert(
                        entry.full_name().to_string(),
                        MessageNames {
                            module: inner.clone(),
                            name: String::new(),
                            view: String::new(),
                            desc,
                            nested: None,
                            oneofs: HashMap::new(),
                        },
                    );
                }
            }
            self.messages.insert(m.full_name().to_string(), info);
        }
    }

    fn unsupported(&self, file: &FileDescriptor, path: &[i32], construct: String, why: &str) -> BuildError {
        let line = self.sources.get(file.name()).map_or(0, |s| s.line(path));
        BuildError::Schema(SchemaError::Unsupported {
            file: file.name().to_string(),
            line,
            construct,
            why: why.to_string(),
        })
    }

    fn check_file(&self, f: &FileDescriptor) -> Result<(), BuildError> {
        let proto = f.file_descriptor_proto();
        if proto.syntax.as_deref() == Some("editions") {
            return Err(self.unsupported(
                f,
                &[12],
                "editions".into(),
                "use `syntax = \"proto3\"` or `\"proto2\"`",
            ));
        }
        if let Some(e) = f.extensions().next() {
            return Err(self.unsupported(
                f,
                e.path(),
                format!("extension `{}`", e.full_name()),
                "Ferry messages have no extension fields; declare an ordinary field instead",
            ));
        }
        let mut stack: Vec<MessageDescriptor> = f.messages().collect();
        while let Some(m) = stack.pop() {
            if let Some(e) = m.child_extensions().next() {
                return Err(self.unsupported(
                    f,
                    e.path(),
                    format!("extension `{}`", e.full_name()),
                    "Ferry messages have no extension fields; declare an ordinary field instead",
                ));
            }
            for field in m.fields() {
                if field.is_group() {
                    return Err(self.unsupported(
                        f,
                        field.path(),
                        format!("group `{}`", field.full_name()),
                        "groups are deprecated; use a nested message field",
                    ));
                }
            }
            stack.extend(m.child_messages());
        }
        Ok(())
    }

    /// A path from module `from` to item `name` in module `to`.
    pub(crate) fn path(&self, from: &[String], to: &[String], name: &str) -> TokenStream {
        let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
        let supers = (common..from.len()).map(|_| quote!(super::));
        let down = to[common..].iter().map(|m| {
            let m = ident(m);
            quote!(#m::)
        });
        let name = ident(name);
        quote!(#(#supers)* #(#down)* #name)
    }

    pub(crate) fn message(&self, m: &MessageDescriptor) -> &MessageNames {
        // Every message of the pool was named in `new`.
        &self.messages[m.full_name()]
    }

    pub(crate) fn enum_names(&self, e: &EnumDescriptor) -> &EnumNames {
        &self.enums[e.full_name()]
    }

    /// Whether a singular field of type `to` inside `from` must be boxed: `to` reaches `from`
    /// again through singular message fields (an inline value would have infinite size).
    pub(crate) fn boxed(&self, from: &MessageDescriptor, to: &MessageDescriptor) -> bool {
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![to.clone()];
        while let Some(m) = stack.pop() {
            if m.full_name() == from.full_name() {
                return true;
            }
            if !seen.insert(m.full_name().to_string()) {
                continue;
            }
            for f in m.fields() {
                if f.is_list() || f.is_map() {
                    continue;
                }
                // Oneof members are boxed anyway.
                if f.containing_oneof().is_some_and(|o| !o.is_synthetic()) {
                    continue;
                }
                if let Some(child) = f.kind().as_message() {
                    stack.push(child.clone());
                }
            }
        }
        false
    }
}

/// The Rust items of a service whose UpperCamelCase name is `stem`: its traits, their server
/// wrappers and its client. Only the trait is `stem` alone, so only it can be a keyword
/// (`Self` becomes `Self_`); the others stay UpperCamelCase.
fn service_items(stem: &str) -> [String; 6] {
    [
        camel(stem),
        format!("{stem}Server"),
        format!("Async{stem}"),
        format!("Async{stem}Server"),
        format!("{stem}Client"),
        format!("Tonic{stem}"),
    ]
}

/// Whether a message needs a nested module (nested types, map entries or oneofs).
fn needs_module(m: &MessageDescriptor) -> bool {
    m.child_messages().next().is_some()
        || m.child_enums().next().is_some()
        || m.oneofs().any(|o| !o.is_synthetic())
}

/// Generates every package of the pool.
pub(crate) fn generate(
    ctx: &Context<'_>,
    services: &mut Option<Box<dyn ServiceGenerator>>,
) -> Result<Vec<PackageCode>, BuildError> {
    service::check_ids(ctx)?;
    let mut out = Vec::new();
    for (package, files) in packages(ctx.pool) {
        let module = package_module(&package);
        let mut items = Vec::new();
        for f in &files {
            for m in f.messages() {
                items.push(message::generate(ctx, &m, &module)?);
            }
            for e in f.enums() {
                items.push(enums::generate(ctx, &e));
            }
            for s in f.services() {
                items.push(service::generate(ctx, &s, &module, services)?);
            }
        }
        out.push(PackageCode {
            module,
            package,
            tokens: quote!(#(#items)*),
        });
    }
    Ok(out)
}

/// The identifier of a module name chosen by the context.
pub(crate) fn module_ident(name: &str) -> proc_macro2::Ident {
    ident(name)
}

/// The index of a oneof in its message (the last element of its descriptor path).
pub(crate) fn oneof_index(o: &prost_reflect::OneofDescriptor) -> usize {
    o.path().last().map_or(0, |i| *i as usize)
}
