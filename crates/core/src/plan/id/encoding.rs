//! The plan id's encoding of a value: compact, unambiguous bytes written
//! straight into SHA-256 by any `Serialize` type, so a field added to a hashed
//! type is hashed without anyone remembering to (v3 hashed serde_json text:
//! the same facts, about 5× the bytes, with every escape and field name).
//!
//! The encoding is a prefix code for a value of a given type, so two
//! different values of one type never give the same bytes:
//! - numbers fixed-width little-endian, booleans one byte, strings and bytes
//!   their length (LEB128) then the bytes;
//! - `None` 0, `Some` 1 then the value; an enum variant by its name;
//! - sequences and maps: 1 before each element (a map's key then its value),
//!   0 at the end;
//! - a struct's fields in declaration order, each 1 then its value, or 0
//!   where serde skips it (`skip_serializing_if` calls `skip_field`), so
//!   which field is absent is always known without writing field names; a
//!   flattened struct is a map, whose keys are written.
//!
//! Positions carry no type tag: every hashed type has one shape per position
//! (derived structs and tagged enums; `Privilege` and `ResourceId` always
//! write a string). An untagged enum would need its variant written first.

use std::fmt;

use serde::ser::{self, Serialize};
use sha2::{Digest, Sha256};

/// SHA-256 fed through a buffer: values arrive as many tiny writes, and the
/// hash is fastest in large blocks. The buffer grows past `FLUSH_AT` by at
/// most one value's small writes.
pub(super) struct IdHasher {
    sha: Sha256,
    buf: Vec<u8>,
}

const FLUSH_AT: usize = 1 << 14;

impl IdHasher {
    pub(super) fn new() -> Self {
        IdHasher {
            sha: Sha256::new(),
            buf: Vec::with_capacity(FLUSH_AT + 256),
        }
    }

    #[inline]
    pub(super) fn byte(&mut self, b: u8) {
        self.buf.push(b);
    }

    /// Small writes only grow the buffer; a long string, and the end of each
    /// value, hand it to the hash once it is full.
    #[inline]
    fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
        if b.len() > 64 {
            self.flush_if_full();
        }
    }

    #[inline]
    fn flush_if_full(&mut self) {
        if self.buf.len() >= FLUSH_AT {
            self.sha.update(&self.buf);
            self.buf.clear();
        }
    }

    #[inline]
    fn len(&mut self, mut n: usize) {
        loop {
            let low = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                return self.byte(low);
            }
            self.byte(low | 0x80);
        }
    }

    #[inline]
    pub(super) fn str(&mut self, s: &str) {
        self.len(s.len());
        self.bytes(s.as_bytes());
    }

    /// Writes `value`. These types always serialise (string map keys only,
    /// no fallible `Serialize`), so there is no error to lose.
    pub(super) fn value(&mut self, value: &impl Serialize) {
        let _ = value.serialize(Encoder {
            h: self,
            blank: &[],
        });
        self.flush_if_full();
    }

    /// Writes `value` as if the named fields of its outermost struct were
    /// skipped (as `None` with `skip_serializing_if` is): what a copy with
    /// them blanked would write, without the copy.
    pub(super) fn value_blanking(&mut self, value: &impl Serialize, fields: &'static [&str]) {
        let _ = value.serialize(Encoder {
            h: self,
            blank: fields,
        });
        self.flush_if_full();
    }

    pub(super) fn finish(mut self) -> [u8; 32] {
        self.sha.update(&self.buf);
        self.sha.finalize().into()
    }
}

/// Never made by our types; serde's contract needs one.
#[derive(Debug)]
pub(super) struct EncodeError(String);

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EncodeError {}

impl ser::Error for EncodeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        EncodeError(msg.to_string())
    }
}

/// The serializer: `blank` names fields of the outermost struct to treat as skipped.
struct Encoder<'a> {
    h: &'a mut IdHasher,
    blank: &'static [&'static str],
}

impl<'a> Encoder<'a> {
    fn inner(&mut self) -> Encoder<'_> {
        Encoder {
            h: self.h,
            blank: &[],
        }
    }
}

type R = Result<(), EncodeError>;

impl<'a> ser::Serializer for Encoder<'a> {
    type Ok = ();
    type Error = EncodeError;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    fn serialize_bool(self, v: bool) -> R {
        self.h.byte(u8::from(v));
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> R {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> R {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> R {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> R {
        self.h.bytes(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_i128(self, v: i128) -> R {
        self.h.bytes(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> R {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> R {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> R {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> R {
        self.h.bytes(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_u128(self, v: u128) -> R {
        self.h.bytes(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> R {
        self.h.bytes(&v.to_bits().to_le_bytes());
        Ok(())
    }
    fn serialize_f64(self, v: f64) -> R {
        self.h.bytes(&v.to_bits().to_le_bytes());
        Ok(())
    }
    fn serialize_char(self, v: char) -> R {
        self.serialize_u32(v.into())
    }
    fn serialize_str(self, v: &str) -> R {
        self.h.str(v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> R {
        self.h.len(v.len());
        self.h.bytes(v);
        Ok(())
    }
    fn serialize_none(self) -> R {
        self.h.byte(0);
        Ok(())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> R {
        self.h.byte(1);
        value.serialize(self)
    }
    fn serialize_unit(self) -> R {
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> R {
        Ok(())
    }
    fn serialize_unit_variant(self, _name: &'static str, _i: u32, variant: &'static str) -> R {
        self.h.str(variant);
        Ok(())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _name: &'static str, value: &T) -> R {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        mut self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        value: &T,
    ) -> R {
        self.h.str(variant);
        value.serialize(self.inner())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self, EncodeError> {
        Ok(self)
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self, EncodeError> {
        Ok(self)
    }
    fn serialize_tuple_struct(self, _name: &'static str, _len: usize) -> Result<Self, EncodeError> {
        Ok(self)
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self, EncodeError> {
        self.h.str(variant);
        Ok(self)
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self, EncodeError> {
        Ok(self)
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self, EncodeError> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self, EncodeError> {
        self.h.str(variant);
        Ok(self)
    }
}

impl<'a> ser::SerializeSeq for Encoder<'a> {
    type Ok = ();
    type Error = EncodeError;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> R {
        self.h.byte(1);
        value.serialize(self.inner())
    }
    fn end(self) -> R {
        self.h.byte(0);
        Ok(())
    }
}

impl<'a> ser::SerializeMap for Encoder<'a> {
    type Ok = ();
    type Error = EncodeError;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> R {
        self.h.byte(1);
        key.serialize(self.inner())
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> R {
        value.serialize(self.inner())
    }
    fn end(self) -> R {
        self.h.byte(0);
        Ok(())
    }
}

/// Tuples have their type's arity: no markers needed.
impl<'a> ser::SerializeTuple for Encoder<'a> {
    type Ok = ();
    type Error = EncodeError;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> R {
        value.serialize(self.inner())
    }
    fn end(self) -> R {
        Ok(())
    }
}

impl<'a> ser::SerializeTupleStruct for Encoder<'a> {
    type Ok = ();
    type Error = EncodeError;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> R {
        value.serialize(self.inner())
    }
    fn end(self) -> R {
        Ok(())
    }
}

impl<'a> ser::SerializeTupleVariant for Encoder<'a> {
    type Ok = ();
    type Error = EncodeError;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> R {
        value.serialize(self.inner())
    }
    fn end(self) -> R {
        Ok(())
    }
}

impl<'a> Encoder<'a> {
    /// A present field: 1 then the value (0 when blanked, as if skipped).
    fn field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> R {
        if self.blank.contains(&key) {
            self.h.byte(0);
            return Ok(());
        }
        self.h.byte(1);
        value.serialize(self.inner())
    }
}

impl<'a> ser::SerializeStruct for Encoder<'a> {
    type Ok = ();
    type Error = EncodeError;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> R {
        self.field(key, value)
    }
    fn skip_field(&mut self, _key: &'static str) -> R {
        self.h.byte(0);
        Ok(())
    }
    fn end(self) -> R {
        Ok(())
    }
}

impl<'a> ser::SerializeStructVariant for Encoder<'a> {
    type Ok = ();
    type Error = EncodeError;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> R {
        self.field(key, value)
    }
    fn skip_field(&mut self, _key: &'static str) -> R {
        self.h.byte(0);
        Ok(())
    }
    fn end(self) -> R {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;

    use super::IdHasher;

    fn hash(v: &impl Serialize) -> [u8; 32] {
        let mut h = IdHasher::new();
        h.value(v);
        h.finish()
    }

    #[derive(Serialize)]
    struct TwoOptional {
        #[serde(skip_serializing_if = "Option::is_none")]
        a: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        b: Option<String>,
    }

    #[test]
    fn which_skipped_field_is_absent_is_part_of_the_bytes() {
        let a = TwoOptional {
            a: Some("x".into()),
            b: None,
        };
        let b = TwoOptional {
            a: None,
            b: Some("x".into()),
        };
        assert_ne!(hash(&a), hash(&b));
    }

    #[test]
    fn sequences_and_strings_cannot_run_into_each_other() {
        let split = (vec!["ab", "c"], vec!["d"]);
        let moved = (vec!["ab"], vec!["c", "d"]);
        assert_ne!(hash(&split), hash(&moved));
        assert_ne!(hash(&("ab", "c")), hash(&("a", "bc")));
        assert_ne!(hash(&Some("")), hash(&None::<&str>));
    }

    #[test]
    fn a_blanked_field_reads_as_skipped() {
        let with = TwoOptional {
            a: Some("x".into()),
            b: Some("y".into()),
        };
        let without = TwoOptional {
            a: Some("x".into()),
            b: None,
        };
        let mut h = IdHasher::new();
        h.value_blanking(&with, &["b"]);
        assert_eq!(h.finish(), hash(&without));
        assert_ne!(hash(&with), hash(&without));
    }
}
