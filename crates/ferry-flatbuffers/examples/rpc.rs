//! A FlatBuffers service over `ferry-rpc`: one server on TCP and shared memory, and a client
//! calling it over both, in one process.
//!
//! The table type is written out by hand so that the example needs no `flatc`; it is what
//! `flatc --rust` generates (trimmed) for
//!
//! ```text
//! table Greeting { name: string (required); count: uint; }
//! ```
//!
//! Run with `cargo run -p ferry-flatbuffers --example rpc`.

use std::time::Duration;

use ferry_buf::{Pool, PoolConfig};
use ferry_flatbuffers::FlatBufferBuilder;
use ferry_flatbuffers::rpc::{self, FlatService};
use ferry_rpc::{Channel, Mode, Server, Services};
use ferry_transport::method_id;

use greeting::Greeting;

const GREET: &str = "/demo.Greeter/Greet";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The server: one method; the handler reads the verified request in place and builds the
    // response in a builder whose blocks come from the session's pool.
    let service = FlatService::new().method(GREET, Mode::Foreground, |_call, request, fbb| {
        let req = request.root::<Greeting>()?;
        Ok(greeting::build(
            fbb,
            &format!("hello, {}", req.name()),
            req.count() + 1,
        ))
    });
    let dir = std::env::temp_dir().join(format!("ferry-flatbuffers-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let server = Server::builder(Services::builder().service(service)?.build()?)
        .listen("tcp://127.0.0.1:0")
        .listen(&format!("shm://{}/greeter.sock", dir.display()))
        .loops(1)
        .start()?;

    // The client, over each transport: the request is built in pool blocks and sent as its
    // slices; the response is verified as a `Greeting` when read.
    let pool = Pool::new(PoolConfig {
        max_bytes: 64 << 20,
        ..PoolConfig::default()
    })?;
    for addr in server.addrs() {
        let channel = Channel::connect(&addr.to_string())?;
        let mut fbb = FlatBufferBuilder::new(&pool);
        let root = greeting::build(&mut fbb, "ferry", 41);
        fbb.finish(root, None);
        let response = rpc::call(&channel, method_id(GREET), &fbb.finished_message())?;
        let greeting = response.root::<Greeting>()?;
        println!("{addr}: {} ({})", greeting.name(), greeting.count());

        // Bytes that are not a `Greeting`: a status naming what failed, not a panic.
        let err = channel
            .call_payload(method_id(GREET), ferry_transport::Payload::Bytes(&[1, 2, 3]))
            .map(|_| ())
            .unwrap_err();
        println!("{addr}: garbage request: {err}");
    }
    server.shutdown(Duration::from_secs(1));
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// `Greeting`, as `flatc --rust` would generate it (reader, verifier, builder).
mod greeting {
    // `Follow::follow` and `Table::get` are the stock runtime's unsafe entry points, which
    // generated code calls the same way.
    #![allow(unsafe_code)]

    use ferry_flatbuffers::{
        FlatBufferBuilder, Follow, ForwardsUOffset, InvalidFlatbuffer, Table, Verifiable, Verifier, WIPOffset,
    };

    const NAME: u16 = 4;
    const COUNT: u16 = 6;

    /// A verified `Greeting` table, read in place.
    #[derive(Clone, Copy, Debug)]
    pub struct Greeting<'a> {
        table: Table<'a>,
    }

    impl<'a> Follow<'a> for Greeting<'a> {
        type Inner = Greeting<'a>;
        unsafe fn follow(buf: &'a [u8], loc: usize) -> Greeting<'a> {
            // SAFETY: the caller (`flatbuffers::root`, after the verifier) guarantees a table
            // at `loc`, as `Follow::follow` requires.
            let table = unsafe { Table::new(buf, loc) };
            Greeting { table }
        }
    }

    impl Verifiable for Greeting<'_> {
        fn run_verifier(v: &mut Verifier, pos: usize) -> Result<(), InvalidFlatbuffer> {
            v.visit_table(pos)?
                .visit_field::<ForwardsUOffset<&str>>("name", NAME, true)?
                .visit_field::<u32>("count", COUNT, false)?
                .finish();
            Ok(())
        }
    }

    impl<'a> Greeting<'a> {
        /// The required `name`.
        pub fn name(&self) -> &'a str {
            // SAFETY: the table was verified as a `Greeting`: slot NAME is a string, present.
            unsafe { self.table.get::<ForwardsUOffset<&str>>(NAME, None) }.unwrap_or_default()
        }

        /// `count` (0 when absent).
        pub fn count(&self) -> u32 {
            // SAFETY: the table was verified as a `Greeting`: slot COUNT is a `u32`.
            unsafe { self.table.get::<u32>(COUNT, Some(0)) }.unwrap_or(0)
        }
    }

    /// Builds a `Greeting` (not finished).
    pub fn build(
        fbb: &mut FlatBufferBuilder<'static>,
        name: &str,
        count: u32,
    ) -> WIPOffset<Greeting<'static>> {
        let name = fbb.create_string(name);
        let start = fbb.start_table();
        fbb.push_slot::<u32>(COUNT, count, 0);
        fbb.push_slot_always(NAME, name);
        let table = fbb.end_table(start);
        fbb.required(table, NAME, "name");
        WIPOffset::new(table.value())
    }
}
