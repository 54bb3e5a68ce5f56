//! What users declare: the custom resources, loading them from files,
//! validating them offline and lowering them into the domain model.

pub mod crd;
pub mod error;
pub use delta_operator_expression as expression;
pub mod load;
pub mod lower;
pub mod lower_objects;
pub mod maintenance;
pub mod objects;
/// Names that are one name to a reader (their own crate: the engine compares
/// declared tables with live ones by them too).
pub use delta_operator_names as names;
pub mod schema_check;
pub mod validate;

pub use crd::{DeltaSchema, DeltaSchemaSpec, DeltaTable, DeltaTableSpec};
pub use error::SpecError;
pub use load::{Loaded, Manifests, load_paths};
pub use objects::{DeltaFunction, DeltaObjectStatus, DeltaView, DeltaVolume};
