//! sql: the life of a statement (parse → bind → plan → execute). See `session`.

pub mod bind;
pub mod copy;
pub mod describe;
pub mod error;
pub mod exec;
pub mod metadata;
pub mod parse;
pub mod plan;
pub mod session;
pub mod types;

pub use error::{Error, Result};
pub use session::{
    Checkpointer, ColumnInfo, CopyIn, CopyOut, CopyStart, Database, DatabaseOptions, Notice,
    Output, Prepared, Session, Tag, TxnStatus,
};
pub use types::Value;
