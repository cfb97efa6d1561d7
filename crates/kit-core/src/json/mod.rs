//! JSON tools shared by protocols: the shape matcher and its matchers, the path subset, and
//! case-insensitive binding.

mod bind;
mod doc;
mod matchers;
pub(crate) mod number;
mod path;
mod shape;

pub(crate) mod swar;

pub(crate) use doc::Lent;

pub use bind::bind;
pub use matchers::{IntoNumber, MATCHER_KEY, Matcher, json_value};
pub use path::{JsonPath, JsonPathError, PathSegment, fold_indices, fold_indices_into, push_member};
pub use shape::{
    JsonShapeMismatchError, PreparedShape, ShapeMismatch, ShapeOptions, ShapeReport, match_shape,
};

#[cfg(test)]
mod tests;
