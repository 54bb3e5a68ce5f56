//! The domain, backend-neutral and free of I/O.

pub mod delta_schema;
pub mod suggest;
pub mod type_syntax;
pub mod types;
pub mod widening;

pub use types::{DataType, StructField};
pub mod hand_off;
pub mod history;
pub mod maintenance;
pub mod names;
pub mod object;
pub mod privilege;
pub mod property;
pub mod retention;
pub mod schema;
pub mod scope;
pub mod table;

pub use hand_off::{HandOff, Handed};
pub use maintenance::{
    Checkpointing, Compaction, Maintenance, RecordedRestorePoint, TableHealth, Vacuum,
};
pub use object::{
    ColumnRead, DesiredObject, FunctionParam, ObjectBody, ObjectKind, ObjectRef, ObservedObject,
    Reads,
};
pub use privilege::Privilege;
pub use property::ColumnMapping;
pub use schema::{ObservedSchema, SchemaMeta};
pub use scope::{Aspect, Scope};
pub use table::{
    CONSTRAINTS_PROPERTY, Check, DesiredColumn, DesiredTable, ForeignKey, Grant, Identity,
    Leftover, LeftoverKind, Mask, OWNER_PROPERTY, ObservedColumn, ObservedTable, PUT_BACK_PROPERTY,
    PrimaryKey, ResourceId, STAGED_FROM_PROPERTY, SchemaMode, SchemaRef, SpecRefusal, TableKind,
    TableRef, Unstated,
};
