//! STUB handlers: the real ones replace these.

use super::{Args, Ctx};
use crate::resp::ReplyBuf;

#[allow(missing_docs)]
pub fn append(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn decr(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn decrby(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn get(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn getdel(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn getset(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn incr(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn incrby(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn mget(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn mset(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn set(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn setnx(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn strlen(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
