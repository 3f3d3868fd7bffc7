//! Structure tests of fusion plans.
