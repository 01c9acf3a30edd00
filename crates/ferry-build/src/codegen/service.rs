//! Services: a description module per `service`, plus whatever the configured
//! [`ServiceGenerator`](crate::ServiceGenerator) adds (server traits, client stubs).

use proc_macro2::TokenStream;
use prost_reflect::ServiceDescriptor;
use quote::quote;

use super::Context;
use super::docs::doc;
use super::names::{Scope, ident, shouty, snake};
use crate::BuildError;
use crate::config::{Method, Service, ServiceGenerator};
use ferry_transport::method_id;

/// The gRPC path of a method, `/package.Service/Method`: what its id is derived from.
fn path_of(m: &prost_reflect::MethodDescriptor) -> String {
    format!("/{}/{}", m.parent_service().full_name(), m.name())
}

/// Fails if two methods of the pool's services share an id (they would share a frame kind).
pub(crate) fn check_ids(ctx: &Context<'_>) -> Result<(), BuildError> {
    let mut seen: std::collections::BTreeMap<u16, (String, String)> = Default::default();
    for s in ctx.pool.services() {
        let src = &ctx.sources[s.parent_file().name()];
        for m in s.methods() {
            let path = path_of(&m);
            let place = format!("{}:{}", s.parent_file().name(), src.line(m.path()));
            if let Some((other, other_place)) = seen.get(&method_id(&path)) {
                return Err(BuildError::Codegen(format!(
                    "{place}: method `{path}` has the same id ({}) as `{other}` ({other_place}): rename one",
                    method_id(&path)
                )));
            }
            seen.insert(method_id(&path), (path, place));
        }
    }
    Ok(())
}

fn describe(ctx: &Context<'_>, s: &ServiceDescriptor, module: &[String]) -> Service {
    let src = &ctx.sources[s.parent_file().name()];
    // The client stub's own methods; the trait functions share its names.
    let mut fns = Scope::with(&["new", "inner", "into_inner"]);
    let mut consts = Scope::with(&["NAME", "METHODS"]);
    let methods = s
        .methods()
        .map(|m| {
            let rust = |d: &prost_reflect::MessageDescriptor, view: bool| {
                let n = ctx.message(d);
                let name = if view { &n.view } else { &n.name };
                ctx.path(module, &n.module, name).to_string().replace(' ', "")
            };
            let fn_name = fns.claim(&snake(m.name()), "_");
            let path = path_of(&m);
            Method {
                name: m.name().to_string(),
                id: method_id(&path),
                path,
                line: src.line(m.path()),
                rust_name: ident(&fn_name).to_string(),
                id_const: consts.claim(&shouty(&fn_name), "_"),
                input_type: m.input().full_name().to_string(),
                output_type: m.output().full_name().to_string(),
                input_rust_type: rust(&m.input(), false),
                output_rust_type: rust(&m.output(), false),
                input_rust_view: rust(&m.input(), true),
                output_rust_view: rust(&m.output(), true),
                client_streaming: m.is_client_streaming(),
                server_streaming: m.is_server_streaming(),
                comments: src.comment(m.path()).to_string(),
            }
        })
        .collect();
    Service {
        name: s.name().to_string(),
        full_name: s.full_name().to_string(),
        package: s.package_name().to_string(),
        file: s.parent_file().name().to_string(),
        line: src.line(s.path()),
        module: ctx.services[s.full_name()].clone(),
        rust: ctx.service_names[s.full_name()].clone(),
        runtime: ctx.runtime.to_string().replace(' ', ""),
        comments: src.comment(s.path()).to_string(),
        methods,
    }
}

pub(crate) fn generate(
    ctx: &Context<'_>,
    s: &ServiceDescriptor,
    module: &[String],
    hook: &mut Option<Box<dyn ServiceGenerator>>,
) -> Result<TokenStream, BuildError> {
    let service = describe(ctx, s, module);
    let src = &ctx.sources[s.parent_file().name()];
    let mname = ident(&service.module);
    let sdoc = doc(&service.comments, &format!("Service `{}`.", service.full_name));
    let full = &service.full_name;
    let methods = service.methods.iter().map(|m| {
        let (name, id, input, output) = (&m.name, m.id, &m.input_type, &m.output_type);
        quote!((#name, #id, #input, #output),)
    });
    let ids = service.methods.iter().map(|m| {
        let c = ident(&m.id_const);
        let id = m.id;
        let line = format!(" Method id of `{}`: the frame kind of its calls.", m.path);
        quote! {
            #[doc = #line]
            pub const #c: u16 = #id;
        }
    });
    let extra: TokenStream = match hook {
        Some(g) => {
            g.check(&service)?;
            let mut buf = String::new();
            g.generate(&service, &mut buf);
            buf.parse().map_err(|e| {
                BuildError::Codegen(format!(
                    "{}:{}: the service generator's output for `{full}` is not Rust tokens: {e}",
                    s.parent_file().name(),
                    src.line(s.path())
                ))
            })?
        }
        None => TokenStream::new(),
    };
    Ok(quote! {
        #sdoc
        pub mod #mname {
            /// Fully qualified service name.
            pub const NAME: &str = #full;
            /// Methods: (name, method id, request type, response type). The id is the frame
            /// kind of the method's calls, `ferry_transport::method_id("/package.Service/Method")`.
            pub const METHODS: &[(&str, u16, &str, &str)] = &[#(#methods)*];
            #(#ids)*
        }
        #extra
    })
}
