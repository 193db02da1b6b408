//! Tests of the definitions against hand-computed values.
