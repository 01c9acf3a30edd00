//! The generated `Kv` service over a [`Store`]: every handler runs on the event loop
//! (foreground), reads its request in place, and answers with counted references to the
//! stored buffers, which the session's context sends by reference (at or above its threshold)
//! or copies (below).

use std::sync::Arc;

use ferry::rpc::{Call, Code, Status};
use ferry::wire::{BytesList, Context, DecodeError};

use crate::Store;
use crate::proto::ferry::kv::{
    AppendView, Count, KeyView, KeysView, Kv, ListIndexView, PutView, Value, Values,
};

/// The store as a service: serve `KvServer::new(KvService::new(store))`.
#[derive(Debug, Clone)]
pub struct KvService {
    store: Arc<Store>,
}

impl KvService {
    /// Serves `store`.
    pub fn new(store: Arc<Store>) -> KvService {
        KvService { store }
    }

    /// The store served.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }
}

pub(crate) fn bad(e: DecodeError) -> Status {
    Status::new(Code::InvalidArgument, e.to_string())
}

/// The keys of a `Keys` request, after the count limit, each UTF-8 checked as it is read (no
/// list is collected).
fn keys<'b>(
    store: &Store,
    list: BytesList<'b>,
) -> Result<impl Iterator<Item = Result<&'b str, Status>> + use<'b>, Status> {
    store.check_keys(list.len())?;
    Ok(list.iter().enumerate().map(|(i, k)| {
        std::str::from_utf8(k)
            .map_err(|e| Status::new(Code::InvalidArgument, format!("Keys.keys[{i}] is not UTF-8: {e}")))
    }))
}

pub(crate) fn count(ctx: &Context, n: usize) -> Count<'_> {
    let mut c = Count::new(ctx);
    c.set_count(n as u64);
    c
}

impl Kv for KvService {
    fn get<'a>(&self, call: &Call<'a>, request: KeyView<'a>) -> Result<Value<'a>, Status> {
        get(&self.store, call.ctx(), request)
    }

    fn put<'a>(&self, call: &Call<'a>, request: PutView<'a>) -> Result<Count<'a>, Status> {
        let key = request.key().map_err(bad)?;
        // Bounded by the validated request's size; the store checks the count.
        let parts: Vec<&[u8]> = request.values().iter().collect();
        self.store.put(key.as_bytes(), &parts)?;
        Ok(count(call.ctx(), parts.len()))
    }

    fn get_m<'a>(&self, call: &Call<'a>, request: KeysView<'a>) -> Result<Values<'a>, Status> {
        get_m(&self.store, call.ctx(), request)
    }

    fn get_list<'a>(&self, call: &Call<'a>, request: KeyView<'a>) -> Result<Values<'a>, Status> {
        get_list(&self.store, call.ctx(), request)
    }

    fn get_from_list<'a>(&self, call: &Call<'a>, request: ListIndexView<'a>) -> Result<Value<'a>, Status> {
        get_from_list(&self.store, call.ctx(), request)
    }

    fn append<'a>(&self, call: &Call<'a>, request: AppendView<'a>) -> Result<Count<'a>, Status> {
        let key = request.key().map_err(bad)?;
        let n = self.store.append(key.as_bytes(), request.value())?;
        Ok(count(call.ctx(), n))
    }

    fn delete<'a>(&self, call: &Call<'a>, request: KeysView<'a>) -> Result<Count<'a>, Status> {
        // Every key is checked before any is deleted: a bad one deletes nothing.
        check_keys(&self.store, request)?;
        let mut n = 0;
        for key in keys(&self.store, request.keys())? {
            n += usize::from(self.store.delete(key?.as_bytes()));
        }
        Ok(count(call.ctx(), n))
    }
}

// The reads, shared with the replicated service (`raft/service.rs`), which runs them after its
// read-index check.

/// `Get`: the single buffer of a key, by reference.
pub(crate) fn get<'a>(store: &Store, ctx: &'a Context, request: KeyView<'_>) -> Result<Value<'a>, Status> {
    let buf = store.get(request.key().map_err(bad)?)?;
    let mut v = Value::new(ctx);
    v.set_value(buf);
    Ok(v)
}

/// `GetM`: several single-buffer values.
pub(crate) fn get_m<'a>(
    store: &Store,
    ctx: &'a Context,
    request: KeysView<'_>,
) -> Result<Values<'a>, Status> {
    let list = request.keys();
    let mut out = Values::new(ctx);
    out.init_values(list.len().min(store.config().max_keys));
    let mut total = 0;
    for key in keys(store, list)? {
        let value = store.get(key?)?;
        total += value.len();
        out.append_values(value);
    }
    store.check_response(total)?;
    Ok(out)
}

/// `GetList`: every buffer of a value.
pub(crate) fn get_list<'a>(
    store: &Store,
    ctx: &'a Context,
    request: KeyView<'_>,
) -> Result<Values<'a>, Status> {
    let key = request.key().map_err(bad)?;
    let mut out = Values::new(ctx);
    let mut total = 0;
    store.get_list(key, |b| {
        total += b.len();
        out.append_values(b.clone());
    })?;
    store.check_response(total)?;
    Ok(out)
}

/// `GetFromList`: one buffer of a list or vector.
pub(crate) fn get_from_list<'a>(
    store: &Store,
    ctx: &'a Context,
    request: ListIndexView<'_>,
) -> Result<Value<'a>, Status> {
    let key = request.key().map_err(bad)?;
    let buf = store.get_from_list(key, request.index() as usize)?;
    let mut v = Value::new(ctx);
    v.set_value(buf);
    Ok(v)
}

/// Checks every key of a `Delete` (count, UTF-8) before any is deleted.
pub(crate) fn check_keys(store: &Store, request: KeysView<'_>) -> Result<(), Status> {
    for key in keys(store, request.keys())? {
        key?;
    }
    Ok(())
}
