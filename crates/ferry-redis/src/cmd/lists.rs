//! STUB handlers: the real ones replace these.

use super::{Args, Ctx};
use crate::resp::ReplyBuf;

#[allow(missing_docs)]
pub fn lindex(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn llen(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn lpop(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn lpush(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn lrange(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn lset(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn ltrim(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn rpop(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn rpush(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
