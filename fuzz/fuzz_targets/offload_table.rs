//! Fuzz target `offload_table`: a host's description table (the `Describe` answer the offload
//! engine routes by) as peer bytes. The first byte picks the form: a whole `Description`
//! message in Ferry's wire format, validated as its view and then as a table; or, so that the
//! fuzzer reaches the descriptor checks without building a Ferry message, a raw
//! `FileDescriptorSet` with one service and its methods named in the input.
//!
//! Nothing may panic; what is accepted must route every listed method, and each route's
//! request and response types must have Ferry descriptors.
#![no_main]

use ferry::{Limits, Message as _};
use ferry_offload::generated::ferry::offload::Description;
use ferry_offload::table::Table;
use libfuzzer_sys::fuzz_target;

fn check(table: &Table) {
    for route in table.routes() {
        assert!(table.route(&route.path).is_some());
        assert!(table.schema().message(route.input.full_name()).is_some());
        assert!(table.schema().message(route.output.full_name()).is_some());
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&form, rest)) = data.split_first() else { return };
    if form % 2 == 0 {
        let limits = Limits {
            max_message_len: 1 << 20,
            ..Limits::default()
        };
        let Ok(view) = Description::decode_with(rest, &limits) else { return };
        if let Ok(table) = Table::from_description(&view) {
            check(&table);
        }
    } else {
        // [service name length, service name, method path length, method path, descriptors..]
        let Some((&n, rest)) = rest.split_first() else { return };
        let Some((service, rest)) = rest.split_at_checked(usize::from(n)) else { return };
        let Some((&m, rest)) = rest.split_first() else { return };
        let Some((path, descriptors)) = rest.split_at_checked(usize::from(m)) else { return };
        let service = String::from_utf8_lossy(service).into_owned();
        let path = String::from_utf8_lossy(path).into_owned();
        if let Ok(table) = Table::new(descriptors.to_vec(), vec![service], &[(path, 1)]) {
            check(&table);
        }
    }
});
