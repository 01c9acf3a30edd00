//! The generated code of `ferry-codegen-tests`, built under edition 2021: clippy and the
//! workspace lints (`-D warnings` in CI) check it builds warning-free there too.
#![forbid(unsafe_code)]

/// The schemas of `../proto/`.
pub mod generated {
    include!(concat!(env!("OUT_DIR"), "/ferry_protos.rs"));
}

/// The golden files of `ferry-build`.
pub mod golden {
    /// `kv.proto`.
    pub mod kv {
        include!("../../../ferry-build/tests/golden/kv.rs");
    }
    /// `nested.proto`.
    pub mod nested {
        include!("../../../ferry-build/tests/golden/nested.rs");
    }
    /// `tree.proto`.
    pub mod tree {
        include!("../../../ferry-build/tests/golden/tree.rs");
    }
}

#[cfg(test)]
mod tests {
    use super::generated::ferry::test as t;
    use ferry::Message as _;

    #[test]
    fn a_generated_message_round_trips_under_edition_2021() {
        use ferry::Outgoing;
        let ctx = ferry::Context::copy_only();
        let names: Vec<&str> = t::ALL_KINDS_DESC.fields().iter().map(|f| f.name).collect();
        assert!(!names.is_empty());
        let m = t::AllKinds::new(ctx);
        let bytes = m.to_vec().unwrap();
        assert!(t::AllKinds::decode(&bytes).is_ok());
    }

    /// The generated service traits are implementable from an edition 2021 crate: the
    /// borrowing echo handler, and `async fn` for the async trait.
    #[test]
    fn generated_service_traits_are_implementable_under_edition_2021() {
        use ferry::rpc::tokio::{AsyncCall, AsyncRequest, AsyncService};
        use ferry::rpc::{Call, Encoded, Mode, Service, Status};

        struct Echo;
        impl t::Echo for Echo {
            const SAY_LATER_MODE: Mode = Mode::Background;
            fn say<'a>(
                &self,
                call: &Call<'a>,
                request: t::SayRequestView<'a>,
            ) -> Result<t::SayResponse<'a>, Status> {
                let mut r = t::SayResponse::new(call.ctx());
                r.set_payload(request.payload());
                Ok(r)
            }
            fn say_later<'a>(
                &self,
                call: &Call<'a>,
                request: t::SayRequestView<'a>,
            ) -> Result<t::SayResponse<'a>, Status> {
                self.say(call, request)
            }
            fn annotate<'a>(
                &self,
                call: &Call<'a>,
                request: t::other::NoteView<'a>,
            ) -> Result<t::other::Note<'a>, Status> {
                let _ = request;
                Ok(t::other::Note::new(call.ctx()))
            }
            fn describe<'a>(
                &self,
                call: &Call<'a>,
                _request: t::AllKindsView<'a>,
            ) -> Result<t::all_kinds::Inner<'a>, Status> {
                Ok(t::all_kinds::Inner::new(call.ctx()))
            }
        }
        impl t::AsyncEcho for Echo {
            async fn say(
                &self,
                call: AsyncCall,
                request: AsyncRequest<t::SayRequest<'static>>,
            ) -> Result<Encoded, Status> {
                let mut r = t::SayResponse::new(call.ctx());
                r.set_payload(request.view()?.payload());
                Encoded::message(&r)
            }
            async fn say_later(
                &self,
                call: AsyncCall,
                request: AsyncRequest<t::SayRequest<'static>>,
            ) -> Result<Encoded, Status> {
                <Self as t::AsyncEcho>::say(self, call, request).await
            }
            async fn annotate(
                &self,
                _call: AsyncCall,
                _request: AsyncRequest<t::other::Note<'static>>,
            ) -> Result<Encoded, Status> {
                Ok(Encoded::default())
            }
            async fn describe(
                &self,
                _call: AsyncCall,
                _request: AsyncRequest<t::AllKinds<'static>>,
            ) -> Result<Encoded, Status> {
                Ok(Encoded::default())
            }
        }
        let modes: Vec<Mode> = t::EchoServer::new(Echo)
            .methods()
            .iter()
            .map(|m| m.mode)
            .collect();
        assert_eq!(
            modes,
            [
                Mode::Foreground,
                Mode::Background,
                Mode::Foreground,
                Mode::Foreground
            ]
        );
        assert_eq!(t::AsyncEchoServer::new(Echo).methods().len(), 4);
    }
}
