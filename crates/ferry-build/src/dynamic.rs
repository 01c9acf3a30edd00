//! Run-time schemas: `.proto` messages as leaked [`ferry_wire::MessageDesc`]s, for tools that
//! encode and decode without a compile step (`ferry encode/decode/inspect`).
