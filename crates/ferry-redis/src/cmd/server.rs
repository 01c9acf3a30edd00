//! STUB handlers: the real ones replace these.

use super::{Args, Ctx};
use crate::resp::ReplyBuf;

#[allow(missing_docs)]
pub fn auth(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn client(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn command(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn config(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn dbsize(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn echo(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn flushall(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn flushdb(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn hello(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn info(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn ping(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn quit(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn select(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
