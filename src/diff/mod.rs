//! Field-level differences between two versions of an object.
//!
//! This part: field paths ([`FieldPath`]) and one-line value rendering ([`render_value`]).

mod path;
mod render;

pub use path::{FieldPath, PathError, PathSegment, parse_path};
pub use render::render_value;
