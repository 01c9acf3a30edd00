//! The built-in service generator: for every `service`, Ferry RPC's server traits (one for the
//! event loop and `ferry::rpc::Server`, one for the tokio driver), their server wrappers and a
//! client stub with one impl block per driver. The code is thin glue over `ferry::rpc`: decode
//! the request in place, call the user's method, serialize-and-send the response.
//!
//! For `service Echo { rpc Say(SayRequest) returns (SayResponse); }` it emits:
//!
//! ```text
//! pub trait Echo: Send + Sync + 'static {              // event loop, ferry::rpc::Server
//!     const SAY_MODE: Mode = Mode::Foreground;
//!     fn say<'a>(&self, call: &Call<'a>, request: SayRequestView<'a>)
//!         -> Result<SayResponse<'a>, Status>;         // may borrow the request and call.ctx()
//! }
//! pub struct EchoServer<T> { .. }                      // impl Service; new(T), from_arc(Arc<T>)
//! pub trait AsyncEcho: 'static {                       // tokio driver, `async fn say(..)`
//!     fn say(&self, call: AsyncCall, request: AsyncRequest<SayRequest<'static>>)
//!         -> impl Future<Output = Result<Encoded, Status>>;
//! }
//! pub struct AsyncEchoServer<T> { .. }                 // impl AsyncService; new(T), from_rc(Rc<T>)
//! pub struct EchoClient<C> { .. }                      // C: Channel, LoopSession or AsyncChannel
//! ```
//!
//! A streaming method (`rpc Watch(WatchRequest) returns (stream Event)`, and client- and
//! bidirectional streaming alike) gets, in `Echo`, `fn watch(&self, call: &Call<'_>) ->
//! Result<Box<dyn StreamHandler>, Status>` (the loop drives the handler), in `AsyncEcho` an
//! `async fn watch(&self, call, requests: RequestStream<WatchRequest>, responses: ResponseSink)`
//! (a server-streaming one takes its one `request: AsyncRequest<WatchRequest>` instead), and
//! in the client `watch(..)` on a `Channel` (a `BlockingStream`) and an `AsyncChannel` (a
//! `RequestSink` and a `ResponseStream`; a server-streaming one sends its request and
//! half-closes first). The event loop's continuations (`LoopSession`) call unary methods only.

use proc_macro2::TokenStream;
use quote::quote;

use super::docs::doc;
use super::names::{Scope, shouty};
use crate::config::{Method, Service, ServiceGenerator};
use crate::{BuildError, SchemaError};

/// Ferry RPC's service code, the generator [`Config::new`](crate::Config::new) installs.
///
/// Per `service Echo`, in the package module: the traits `Echo` (handlers that run on the
/// event loop, foreground or background, and may answer with messages that borrow the
/// request) and `AsyncEcho` (`async fn` handlers for `ferry::rpc::tokio`), their wrappers
/// `EchoServer` and `AsyncEchoServer` (what a server is given), and `EchoClient`, whose methods
/// call through a `ferry::rpc::Channel`, a `ferry::rpc::LoopSession` or a
/// `ferry::rpc::tokio::AsyncChannel`. Item names are [`Service::rust`], method names
/// [`Method::rust_name`], so nothing collides with the package's messages.
///
/// Streaming methods are served and called through ferry-rpc's streams (see the module
/// docs); with [`tonic_style`](Self::tonic_style), a service with one fails the build, naming
/// it (the tonic-style trait covers unary methods).
#[derive(Debug, Clone, Default)]
pub struct RpcGenerator {
    tonic_style: bool,
}

impl RpcGenerator {
    /// The generator.
    pub fn new() -> Self {
        RpcGenerator::default()
    }

    /// Also generates, for every service, a tonic-style server trait (`TonicEcho`: each
    /// handler takes a `ferry::rpc::compat::Request` and returns a `ferry::rpc::compat::Response`,
    /// as tonic's generated traits do, over the same zero-copy views) and its adapter to the
    /// synchronous trait, so that `EchoServer::new(ferry::rpc::compat::TonicStyle(your_impl))`
    /// serves it: what a team moving from tonic writes first. Off by default.
    pub fn tonic_style(mut self, yes: bool) -> Self {
        self.tonic_style = yes;
        self
    }
}

impl ServiceGenerator for RpcGenerator {
    fn check(&self, service: &Service) -> Result<(), BuildError> {
        if !self.tonic_style {
            return Ok(());
        }
        for m in &service.methods {
            let kind = match (m.client_streaming, m.server_streaming) {
                (false, false) => continue,
                (true, false) => "client-streaming",
                (false, true) => "server-streaming",
                (true, true) => "bidirectional-streaming",
            };
            return Err(BuildError::Schema(SchemaError::Unsupported {
                file: service.file.clone(),
                line: m.line,
                construct: format!("{kind} method `{}/{}`", service.full_name, m.name),
                why: "the tonic-style trait (`RpcGenerator::tonic_style`) covers unary methods: \
                      serve this service through the generated `AsyncEcho`-style or `Echo`-style \
                      trait instead"
                    .to_string(),
            }));
        }
        Ok(())
    }

    fn generate(&mut self, service: &Service, buf: &mut String) {
        buf.push_str(&generate(service).to_string());
        if self.tonic_style {
            buf.push_str(&tonic_style(service).to_string());
        }
    }
}

/// Rust tokens from a name or path the code generator produced (so they parse); a
/// `compile_error!` naming it otherwise (a hand-made [`Service`] with a bad path).
fn tokens(s: &str) -> TokenStream {
    s.parse().unwrap_or_else(|_| {
        let msg = format!("ferry-build: `{s}` is not a Rust path");
        quote!(::core::compile_error!(#msg))
    })
}

/// `#[doc]` lines of `text`, wrapped at 90 columns (generated prose reads like written docs).
fn prose(text: &str) -> TokenStream {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > 90 {
            lines.push(std::mem::take(&mut line));
        }
        line.push(' ');
        line.push_str(word);
    }
    lines.push(line);
    quote!(#(#[doc = #lines])*)
}

/// A method's names as tokens.
struct Names {
    func: TokenStream,
    id: TokenStream,
    mode: TokenStream,
    input: TokenStream,
    input_view: TokenStream,
    output: TokenStream,
    output_view: TokenStream,
    path: String,
    /// `ferry::rpc::Shape`'s variant.
    shape: Shape,
    /// For the traits: the `.proto` comment, or "Handles `/package.Service/Method`."
    docs: TokenStream,
    /// For the client: the `.proto` comment, or "Calls `/package.Service/Method`."
    client_docs: TokenStream,
}

/// A method's shape, as `ferry::rpc::Shape` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Unary,
    ClientStreaming,
    ServerStreaming,
    Bidirectional,
}

impl Shape {
    fn variant(self) -> TokenStream {
        match self {
            Shape::Unary => quote!(Unary),
            Shape::ClientStreaming => quote!(ClientStreaming),
            Shape::ServerStreaming => quote!(ServerStreaming),
            Shape::Bidirectional => quote!(Bidirectional),
        }
    }
}

/// The name of the implementation's type parameter: `T`, unless a type the code names
/// unqualified is called `T` (a message `T`, a service `T`).
fn type_param(service: &Service) -> TokenStream {
    let taken = |name: &str| {
        let r = &service.rust;
        [
            &r.server_trait,
            &r.server,
            &r.async_server_trait,
            &r.async_server,
            &r.client,
        ]
        .iter()
        .any(|n| n.as_str() == name)
            || service.methods.iter().any(|m| {
                [
                    &m.input_rust_type,
                    &m.output_rust_type,
                    &m.input_rust_view,
                    &m.output_rust_view,
                ]
                .iter()
                .any(|p| p.split("::").next() == Some(name))
            })
    };
    let name = (1..)
        .map(|n| if n == 1 { "T".to_string() } else { format!("T{n}") })
        .find(|n| !taken(n))
        .expect("a free name");
    tokens(&name)
}

fn generate(service: &Service) -> TokenStream {
    let rt = tokens(&service.runtime);
    let rpc = quote!(#rt::rpc);
    let module = tokens(&service.module);
    let r = &service.rust;
    let (sync_trait, server) = (tokens(&r.server_trait), tokens(&r.server));
    let (async_trait, async_server) = (tokens(&r.async_server_trait), tokens(&r.async_server));
    let client = tokens(&r.client);
    let t = type_param(service);
    let full = &service.full_name;
    let result = quote!(::core::result::Result);

    // Associated constants of the trait, beside its functions: `SAY_MODE` for `say`.
    let mut consts = Scope::default();
    let methods: Vec<Names> = service
        .methods
        .iter()
        .map(|m: &Method| Names {
            func: tokens(&m.rust_name),
            id: {
                let c = tokens(&m.id_const);
                quote!(#module::#c)
            },
            mode: tokens(&consts.claim(
                &format!("{}_MODE", shouty(m.rust_name.trim_start_matches("r#"))),
                "_",
            )),
            input: tokens(&m.input_rust_type),
            input_view: tokens(&m.input_rust_view),
            output: tokens(&m.output_rust_type),
            output_view: tokens(&m.output_rust_view),
            path: m.path.clone(),
            shape: match (m.client_streaming, m.server_streaming) {
                (false, false) => Shape::Unary,
                (true, false) => Shape::ClientStreaming,
                (false, true) => Shape::ServerStreaming,
                (true, true) => Shape::Bidirectional,
            },
            docs: doc(&m.comments, &format!("Handles `{}`.", m.path)),
            client_docs: doc(&m.comments, &format!("Calls `{}`.", m.path)),
        })
        .collect();

    // What the services report to a server: path, id, request type, mode.
    let infos = |mode: &dyn Fn(&Names) -> TokenStream| -> Vec<TokenStream> {
        methods
            .iter()
            .map(|m| {
                let (path, id, input, mode) = (&m.path, &m.id, &m.input, mode(m));
                let shape = m.shape.variant();
                quote! {
                    #rpc::MethodInfo {
                        path: #path,
                        id: #id,
                        request: ::core::option::Option::Some(
                            <#input<'static> as #rt::wire::Message<'static>>::desc()
                        ),
                        mode: #mode,
                        shape: #rpc::Shape::#shape,
                    },
                }
            })
            .collect()
    };
    let sync_infos = infos(&|m| match m.shape {
        Shape::Unary => {
            let c = &m.mode;
            quote!(<#t as #sync_trait>::#c)
        }
        // Streams run on the loop.
        _ => quote!(#rpc::Mode::Foreground),
    });
    let (unary, streaming): (Vec<&Names>, Vec<&Names>) =
        methods.iter().partition(|m| m.shape == Shape::Unary);
    let async_infos = infos(&|_| quote!(#rpc::Mode::Foreground));
    let no_method = format!("`{full}` has no method with id {{other}}");
    let unimplemented = quote! {
        #result::Err(#rpc::Status::new(#rpc::Code::Unimplemented, ::std::format!(#no_method)))
    };

    // The synchronous trait and its server.
    let service_docs = doc(&service.comments, &format!("Service `{full}`."));
    let trait_items = methods.iter().map(|m| {
        let Names {
            func,
            mode,
            input_view,
            output,
            docs,
            ..
        } = m;
        if m.shape != Shape::Unary {
            let (input, output) = (&m.input, &m.output);
            let stream_doc = prose(&format!(
                " A stream: the loop drives the handler returned, giving it each `{}` request \
                 (`request.decode::<{}>()` reads it in place) and sending its `{}` messages \
                 through `out.send(..)`.",
                input.to_string().replace(' ', ""),
                input.to_string().replace(' ', ""),
                output.to_string().replace(' ', ""),
            ));
            return quote! {
                #docs
                ///
                #stream_doc
                fn #func(
                    &self,
                    call: &#rpc::Call<'_>,
                ) -> #result<::std::boxed::Box<dyn #rpc::StreamHandler>, #rpc::Status>;
            };
        }
        let mode_doc = prose(&format!(
            " Where `{}` runs (eRPC: a handler declares foreground or background): on the event \
             loop (default), or on the server's worker pool.",
            func.to_string().trim_start_matches("r#")
        ));
        quote! {
            #mode_doc
            const #mode: #rpc::Mode = #rpc::Mode::Foreground;
            #docs
            fn #func<'a>(
                &self,
                call: &#rpc::Call<'a>,
                request: #input_view<'a>,
            ) -> #result<#output<'a>, #rpc::Status>;
        }
    });
    let sync_arms = unary.iter().map(|m| {
        let Names { func, id, input, .. } = m;
        quote! {
            #id => {
                let request = request.decode::<#input<'static>>()?;
                let response = <#t as #sync_trait>::#func(&self.inner, call, request)?;
                reply.send(&response)
            }
        }
    });
    let sync_call = if unary.is_empty() {
        quote! {
            let _ = (request, reply);
            let other = call.method();
            #unimplemented
        }
    } else {
        quote! {
            match call.method() {
                #(#sync_arms)*
                other => #unimplemented,
            }
        }
    };
    let open_arms = streaming.iter().map(|m| {
        let Names { func, id, .. } = m;
        quote!(#id => <#t as #sync_trait>::#func(&self.inner, call),)
    });
    let sync_open = (!streaming.is_empty()).then(|| {
        quote! {
            fn open(
                &self,
                call: &#rpc::Call<'_>,
            ) -> #result<::std::boxed::Box<dyn #rpc::StreamHandler>, #rpc::Status> {
                match call.method() {
                    #(#open_arms)*
                    other => #unimplemented,
                }
            }
        }
    });
    let sync_trait_doc = prose(&format!(
        " The server side for the event loop and `ferry::rpc::Server`: implement it and serve \
         `{server}::new(your_impl)`. A handler reads the request in place and may answer with a \
         message that borrows from it and from `call.ctx()` (zero copy); the response is \
         serialized and sent as it returns."
    ));
    let server_doc = prose(&format!(
        " Serves an implementation of [`{sync_trait}`]: add it to `ferry::rpc::Services`. It \
         implements `ferry::rpc::Service`."
    ));

    // The async trait and its server.
    let async_items = methods.iter().map(|m| {
        let Names {
            func, input, docs, ..
        } = m;
        if m.shape == Shape::ServerStreaming {
            return quote! {
                #docs
                fn #func(
                    &self,
                    call: #rpc::tokio::AsyncCall,
                    request: #rpc::tokio::AsyncRequest<#input<'static>>,
                    responses: #rpc::tokio::ResponseSink,
                ) -> impl ::core::future::Future<Output = #result<(), #rpc::Status>>;
            };
        }
        if m.shape != Shape::Unary {
            return quote! {
                #docs
                fn #func(
                    &self,
                    call: #rpc::tokio::AsyncCall,
                    requests: #rpc::tokio::RequestStream<#input<'static>>,
                    responses: #rpc::tokio::ResponseSink,
                ) -> impl ::core::future::Future<Output = #result<(), #rpc::Status>>;
            };
        }
        quote! {
            #docs
            fn #func(
                &self,
                call: #rpc::tokio::AsyncCall,
                request: #rpc::tokio::AsyncRequest<#input<'static>>,
            ) -> impl ::core::future::Future<Output = #result<#rpc::Encoded, #rpc::Status>>;
        }
    });
    let async_arms = unary.iter().map(|m| {
        let Names { func, id, .. } = m;
        quote! {
            #id => <#t as #async_trait>::#func(&inner, call, request.typed()).await,
        }
    });
    let async_call = if unary.is_empty() {
        quote! {
            let _ = request;
            let other = call.method();
            ::std::boxed::Box::pin(::core::future::ready(#unimplemented))
        }
    } else {
        quote! {
            let inner = ::std::rc::Rc::clone(&self.inner);
            ::std::boxed::Box::pin(async move {
                match call.method() {
                    #(#async_arms)*
                    other => #unimplemented,
                }
            })
        }
    };
    let no_request = "a server-streaming call sent no request message";
    let stream_arms = streaming.iter().map(|m| {
        let Names { func, id, .. } = m;
        match m.shape {
            Shape::ServerStreaming => quote! {
                #id => {
                    let mut requests = requests.typed();
                    let mut request = requests.message().await?.ok_or_else(|| {
                        #rpc::Status::new(#rpc::Code::InvalidArgument, #no_request)
                    })?;
                    // Kept while the handler streams: out of the peer's memory, so that
                    // its blocks keep being acknowledged.
                    request.detach(call.ctx());
                    <#t as #async_trait>::#func(&inner, call, request, responses).await
                }
            },
            _ => quote! {
                #id => <#t as #async_trait>::#func(&inner, call, requests.typed(), responses).await,
            },
        }
    });
    let async_stream = (!streaming.is_empty()).then(|| {
        quote! {
            fn stream(
                &self,
                call: #rpc::tokio::AsyncCall,
                requests: #rpc::tokio::RequestStream<()>,
                responses: #rpc::tokio::ResponseSink,
            ) -> #rpc::tokio::LocalBoxFuture<#result<(), #rpc::Status>> {
                let inner = ::std::rc::Rc::clone(&self.inner);
                ::std::boxed::Box::pin(async move {
                    match call.method() {
                        #(#stream_arms)*
                        other => #unimplemented,
                    }
                })
            }
        }
    });
    let async_trait_doc = prose(&format!(
        " The server side for the tokio driver (`ferry::rpc::tokio::AsyncServer`): implement it \
         with `async fn`s and serve `{async_server}::new(your_impl)`. A handler owns its request \
         (`request.view()` reads it in place) and answers with a serialized response, \
         `ferry::rpc::Encoded::message(&response)`."
    ));
    let async_server_doc = prose(&format!(
        " Serves an implementation of [`{async_trait}`]: add it to `ferry::rpc::tokio::AsyncServices`. \
         It implements `ferry::rpc::tokio::AsyncService`."
    ));

    // The client stub, one impl block per driver.
    let blocking = methods.iter().map(|m| {
        let Names {
            func,
            id,
            input,
            output,
            client_docs,
            ..
        } = m;
        if m.shape == Shape::ServerStreaming {
            return quote! {
                #client_docs
                ///
                /// Sends `request` and half-closes: the stream yields the responses.
                pub fn #func(
                    &self,
                    request: &#input<'_>,
                ) -> #result<#rpc::BlockingStream<'_, #output<'static>>, #rpc::Status> {
                    let mut stream = self.inner.open::<#output<'static>>(#id, &#rpc::CallOptions::default())?;
                    stream.send(request)?;
                    stream.end()?;
                    ::core::result::Result::Ok(stream)
                }
            };
        }
        if m.shape != Shape::Unary {
            return quote! {
                #client_docs
                ///
                /// Opens the stream: send requests, `end()`, and read the responses.
                pub fn #func(
                    &self,
                ) -> #result<#rpc::BlockingStream<'_, #output<'static>>, #rpc::Status> {
                    self.inner.open::<#output<'static>>(#id, &#rpc::CallOptions::default())
                }
            };
        }
        quote! {
            #client_docs
            pub fn #func(
                &self,
                request: &#input<'_>,
            ) -> #result<#rpc::Response<#output<'static>>, #rpc::Status> {
                self.inner.call::<#output<'static>>(#id, request)
            }
        }
    });
    let continuations = unary.iter().map(|m| {
        let Names {
            func,
            id,
            input,
            output,
            output_view,
            client_docs,
            ..
        } = m;
        quote! {
            #client_docs
            ///
            /// `then` runs on the loop with the response read in place, or the status.
            pub fn #func(
                &self,
                lp: &mut #rpc::EventLoop,
                request: &#input<'_>,
                then: impl for<'f> ::core::ops::FnOnce(
                    &mut #rpc::EventLoop,
                    #result<#output_view<'f>, #rpc::Status>,
                ) + 'static,
            ) -> #result<#rpc::CallId, #rpc::Status> {
                #rpc::EventLoop::call_then::<#output<'static>>(lp, self.inner, #id, request, then)
            }
        }
    });
    let asynchronous = methods.iter().map(|m| {
        let Names {
            func,
            id,
            input,
            output,
            client_docs,
            ..
        } = m;
        if m.shape == Shape::ServerStreaming {
            return quote! {
                #client_docs
                ///
                /// Sends `request` and half-closes: the stream yields the responses.
                pub async fn #func(
                    &self,
                    request: &#input<'_>,
                ) -> #result<#rpc::tokio::ResponseStream<#output<'static>>, #rpc::Status> {
                    let (mut requests, responses) = self.inner.open(#id, &#rpc::CallOptions::default())?;
                    requests.send(request).await?;
                    requests.end().await?;
                    ::core::result::Result::Ok(responses.typed())
                }
            };
        }
        if m.shape != Shape::Unary {
            return quote! {
                #client_docs
                ///
                /// Opens the stream: send requests with the sink (`end()` when done) and read the
                /// responses from the stream.
                pub fn #func(
                    &self,
                ) -> #result<
                    (#rpc::tokio::RequestSink, #rpc::tokio::ResponseStream<#output<'static>>),
                    #rpc::Status,
                > {
                    let (requests, responses) = self.inner.open(#id, &#rpc::CallOptions::default())?;
                    ::core::result::Result::Ok((requests, responses.typed()))
                }
            };
        }
        quote! {
            #client_docs
            pub async fn #func(
                &self,
                request: &#input<'_>,
            ) -> #result<#rpc::Response<#output<'static>>, #rpc::Status> {
                self.inner.call::<#output<'static>>(#id, request).await
            }
        }
    });
    let client_impls = if methods.is_empty() {
        TokenStream::new()
    } else {
        quote! {
            impl #client<#rpc::Channel> {
                #(#blocking)*
            }
            impl #client<#rpc::LoopSession> {
                #(#continuations)*
            }
            impl #client<#rpc::tokio::AsyncChannel> {
                #(#asynchronous)*
            }
        }
    };
    let client_doc = prose(&format!(
        " The client of `{full}`: `{client}::new(c)` calls through `c`, a `ferry::rpc::Channel` \
         (blocking), a `ferry::rpc::LoopSession` (continuations on an event loop) or a \
         `ferry::rpc::tokio::AsyncChannel` (`async`). Build requests with the channel's context."
    ));

    quote! {
        #service_docs
        ///
        #sync_trait_doc
        pub trait #sync_trait: ::core::marker::Send + ::core::marker::Sync + 'static {
            #(#trait_items)*
        }

        #server_doc
        pub struct #server<#t> {
            inner: ::std::sync::Arc<#t>,
        }

        impl<#t> #server<#t> {
            /// Serves `inner`.
            pub fn new(inner: #t) -> Self {
                Self::from_arc(::std::sync::Arc::new(inner))
            }

            /// Serves an implementation shared with other code.
            pub fn from_arc(inner: ::std::sync::Arc<#t>) -> Self {
                Self { inner }
            }
        }

        impl<#t> ::core::clone::Clone for #server<#t> {
            fn clone(&self) -> Self {
                Self { inner: ::std::sync::Arc::clone(&self.inner) }
            }
        }

        impl<#t: #sync_trait> #rpc::Service for #server<#t> {
            fn methods(&self) -> ::std::vec::Vec<#rpc::MethodInfo> {
                ::std::vec::Vec::from([#(#sync_infos)*])
            }

            fn call<'a>(
                &self,
                call: &#rpc::Call<'a>,
                request: #rpc::Request<'a>,
                reply: &mut #rpc::Reply<'_>,
            ) -> #result<(), #rpc::Status> {
                #sync_call
            }

            #sync_open
        }

        #service_docs
        ///
        #async_trait_doc
        pub trait #async_trait: 'static {
            #(#async_items)*
        }

        #async_server_doc
        pub struct #async_server<#t> {
            inner: ::std::rc::Rc<#t>,
        }

        impl<#t> #async_server<#t> {
            /// Serves `inner`.
            pub fn new(inner: #t) -> Self {
                Self::from_rc(::std::rc::Rc::new(inner))
            }

            /// Serves an implementation shared with other code on this thread.
            pub fn from_rc(inner: ::std::rc::Rc<#t>) -> Self {
                Self { inner }
            }
        }

        impl<#t> ::core::clone::Clone for #async_server<#t> {
            fn clone(&self) -> Self {
                Self { inner: ::std::rc::Rc::clone(&self.inner) }
            }
        }

        impl<#t: #async_trait> #rpc::tokio::AsyncService for #async_server<#t> {
            fn methods(&self) -> ::std::vec::Vec<#rpc::MethodInfo> {
                ::std::vec::Vec::from([#(#async_infos)*])
            }

            fn call(
                &self,
                call: #rpc::tokio::AsyncCall,
                request: #rpc::tokio::AsyncRequest<()>,
            ) -> #rpc::tokio::LocalBoxFuture<#result<#rpc::Encoded, #rpc::Status>> {
                #async_call
            }

            #async_stream
        }

        #client_doc
        #[derive(Debug, Clone)]
        pub struct #client<C> {
            inner: C,
        }

        impl<C> #client<C> {
            /// A client that calls through `inner`.
            pub fn new(inner: C) -> Self {
                Self { inner }
            }

            /// The channel or session it calls through.
            pub fn inner(&self) -> &C {
                &self.inner
            }

            /// Gives back the channel or session.
            pub fn into_inner(self) -> C {
                self.inner
            }
        }

        #client_impls
    }
}

/// The tonic-style trait of a service and its adapter to the synchronous trait (see
/// [`RpcGenerator::tonic_style`]).
fn tonic_style(service: &Service) -> TokenStream {
    let rt = tokens(&service.runtime);
    let rpc = quote!(#rt::rpc);
    let r = &service.rust;
    let (sync_trait, server, tonic_trait) =
        (tokens(&r.server_trait), tokens(&r.server), tokens(&r.tonic_trait));
    let t = type_param(service);
    let result = quote!(::core::result::Result);
    let mut consts = Scope::default();
    let mut items = Vec::new();
    let mut adapters = Vec::new();
    for m in &service.methods {
        let func = tokens(&m.rust_name);
        let mode = tokens(&consts.claim(
            &format!("{}_MODE", shouty(m.rust_name.trim_start_matches("r#"))),
            "_",
        ));
        let (input_view, output) = (tokens(&m.input_rust_view), tokens(&m.output_rust_type));
        let docs = doc(&m.comments, &format!("Handles `{}`.", m.path));
        items.push(quote! {
            /// Where the handler runs, as for the synchronous trait.
            const #mode: #rpc::Mode = #rpc::Mode::Foreground;
            #docs
            fn #func<'a>(
                &self,
                request: #rpc::compat::Request<'_, 'a, #input_view<'a>>,
            ) -> #result<#rpc::compat::Response<#output<'a>>, #rpc::Status>;
        });
        adapters.push(quote! {
            const #mode: #rpc::Mode = <#t as #tonic_trait>::#mode;
            fn #func<'a>(
                &self,
                call: &#rpc::Call<'a>,
                request: #input_view<'a>,
            ) -> #result<#output<'a>, #rpc::Status> {
                #rpc::compat::respond(
                    call,
                    <#t as #tonic_trait>::#func(&self.0, #rpc::compat::Request::new(call, request)),
                )
            }
        });
    }
    let trait_doc = prose(&format!(
        " The tonic-style server side of `{}`: each handler takes a `Request` (the view, with \
         `get_ref`, `into_inner`, `metadata`) and returns a `Response` (with `metadata_mut`), as \
         in tonic. Serve `{server}::new(ferry::rpc::compat::TonicStyle(your_impl))`.",
        service.full_name
    ));
    quote! {
        #trait_doc
        pub trait #tonic_trait: ::core::marker::Send + ::core::marker::Sync + 'static {
            #(#items)*
        }

        impl<#t: #tonic_trait> #sync_trait for #rpc::compat::TonicStyle<#t> {
            #(#adapters)*
        }
    }
}
