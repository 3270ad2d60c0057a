//! Reading an input enum tagged by `op` without buffering it first.
//!
//! serde's derive for `#[serde(tag = "op")]` cannot know where in the object the tag is, so it
//! buffers every field into its private `Content` tree and then reads the variant from that:
//! an allocation per field and per string, and half of what a binding spent reading an input.
//! The hosts write `op` first (so do the docs and the vectors), so [`op_first!`] gives an enum
//! a `Deserialize` that reads the first key and, when it is `op`, reads the variant straight
//! from the rest of the same map: the enum derives its externally tagged reading under
//! `#[serde(remote = "Self")]` (an inherent `deserialize`), which [`Rest`] feeds the `op` as
//! the variant and the remaining entries as its fields. An object whose `op` comes later is
//! still read, through a small buffer of its own ([`Buffered`]): the same answers, slower.

use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IntoDeserializer, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};

/// Gives `$ty` (an enum that derives `Deserialize` under `#[serde(remote = "Self",
/// rename_all = "snake_case", deny_unknown_fields)]`) the reading of an object tagged by `op`.
macro_rules! op_first {
    ($ty:ident) => {
        impl $crate::machine::op_first::OpTagged for $ty {
            fn from_rest<'de, M: serde::de::MapAccess<'de>>(
                rest: $crate::machine::op_first::Rest<'de, M>,
            ) -> Result<Self, M::Error> {
                // The inherent (externally tagged) reading `remote = "Self"` derives.
                $ty::deserialize(rest)
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $crate::machine::op_first::deserialize(
                    d,
                    concat!("an object tagged by op (", stringify!($ty), ")"),
                )
            }
        }
    };
}
pub(crate) use op_first;

/// An enum read by [`op_first!`].
pub trait OpTagged: Sized {
    /// Reads the variant `rest` names from its fields.
    fn from_rest<'de, M: MapAccess<'de>>(rest: Rest<'de, M>) -> Result<Self, M::Error>;
}

/// Reads an `op`-tagged `T` from `d` (an object).
pub fn deserialize<'de, D: Deserializer<'de>, T: OpTagged>(
    d: D,
    expecting: &'static str,
) -> Result<T, D::Error> {
    d.deserialize_map(OpVisitor(expecting, std::marker::PhantomData))
}

struct OpVisitor<T>(&'static str, std::marker::PhantomData<T>);

impl<'de, T: OpTagged> Visitor<'de> for OpVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.0)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let first = match map.next_key::<Key>()? {
            None => return Err(de::Error::missing_field("op")),
            Some(Key::Op) => {
                let op: Op = map.next_value()?;
                return T::from_rest(Rest { op, map: Some(map), _de: std::marker::PhantomData });
            }
            Some(Key::Other(k)) => k,
        };
        // `op` later on: keep what comes before it, then read on from the map.
        let mut before = vec![(first, map.next_value::<Buffered>()?)];
        while let Some(k) = map.next_key::<Key>()? {
            match k {
                Key::Op => {
                    let op: Op = map.next_value()?;
                    let map = Chained { before: before.into_iter(), value: None, map };
                    let rest = Rest { op, map: Some(map), _de: std::marker::PhantomData };
                    return T::from_rest(rest);
                }
                Key::Other(k) => before.push((k, map.next_value()?)),
            }
        }
        Err(de::Error::missing_field("op"))
    }
}

/// A key: `op`, or another (kept), read without allocating for `op`.
enum Key {
    Op,
    Other(Buffered),
}

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct K;
        impl<'de> Visitor<'de> for K {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E>(self, s: &str) -> Result<Key, E> {
                Ok(if s == "op" { Key::Op } else { Key::Other(Buffered::Str(s.to_owned())) })
            }
            fn visit_bool<E>(self, b: bool) -> Result<Key, E> {
                Ok(Key::Other(Buffered::Bool(b)))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Key, E> {
                Ok(Key::Other(Buffered::I64(n)))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Key, E> {
                BufferedVisitor.visit_u64(n).map(Key::Other)
            }
            fn visit_bytes<E>(self, b: &[u8]) -> Result<Key, E> {
                Ok(Key::Other(Buffered::Bytes(b.to_vec())))
            }
        }
        d.deserialize_any(K)
    }
}

/// The variant's name, kept inline when short (they all are).
struct Op {
    len: u8,
    inline: [u8; 32],
    long: Option<String>,
}

impl Op {
    fn as_str(&self) -> &str {
        match &self.long {
            Some(s) => s,
            // Copied from a `&str` whole: valid UTF-8.
            None => std::str::from_utf8(&self.inline[..self.len as usize]).unwrap_or(""),
        }
    }
}

impl<'de> de::Deserialize<'de> for Op {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Op, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Op;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("the operation's name (a string)")
            }
            fn visit_str<E>(self, s: &str) -> Result<Op, E> {
                let mut op = Op { len: 0, inline: [0; 32], long: None };
                if s.len() <= op.inline.len() {
                    op.inline[..s.len()].copy_from_slice(s.as_bytes());
                    op.len = s.len() as u8;
                } else {
                    op.long = Some(s.to_owned());
                }
                Ok(op)
            }
        }
        d.deserialize_str(V)
    }
}

/// The `op` read and the map's remaining entries: a deserializer of the externally tagged
/// enum (`deserialize_enum` offers `op` as the variant and the entries as its fields).
pub struct Rest<'de, A> {
    op: Op,
    map: Option<A>,
    _de: std::marker::PhantomData<&'de ()>,
}

impl<'de, A: MapAccess<'de>> Deserializer<'de> for Rest<'de, A> {
    type Error = A::Error;

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, A::Error> {
        v.visit_enum(self)
    }

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, A::Error> {
        Err(de::Error::custom("an op-tagged input is read as an enum"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct identifier
        ignored_any
    }
}

impl<'de, A: MapAccess<'de>> EnumAccess<'de> for Rest<'de, A> {
    type Error = A::Error;
    type Variant = Fields<A>;

    fn variant_seed<S: DeserializeSeed<'de>>(
        mut self,
        seed: S,
    ) -> Result<(S::Value, Fields<A>), A::Error> {
        let name = seed.deserialize(self.op.as_str().into_deserializer())?;
        Ok((name, Fields(self.map.take().expect("read once"))))
    }
}

/// A variant's fields: the rest of the map.
pub struct Fields<A>(A);

impl<'de, A: MapAccess<'de>> VariantAccess<'de> for Fields<A> {
    type Error = A::Error;

    fn unit_variant(mut self) -> Result<(), A::Error> {
        // `deny_unknown_fields`: a unit variant takes no other key.
        match self.0.next_key::<String>()? {
            None => Ok(()),
            Some(k) => Err(de::Error::unknown_field(&k, &[])),
        }
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, A::Error> {
        seed.deserialize(de::value::MapAccessDeserializer::new(self.0))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value, A::Error> {
        Err(de::Error::custom("an op-tagged input has no tuple variants"))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, A::Error> {
        v.visit_map(self.0)
    }
}

/// The entries read before `op`, then the rest of the map.
struct Chained<A> {
    before: std::vec::IntoIter<(Buffered, Buffered)>,
    value: Option<Buffered>,
    map: A,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Chained<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        match self.before.next() {
            Some((k, v)) => {
                self.value = Some(v);
                seed.deserialize(BufferedDe::new(k)).map(Some)
            }
            None => self.map.next_key_seed(seed),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        match self.value.take() {
            Some(v) => seed.deserialize(BufferedDe::new(v)),
            None => self.map.next_value_seed(seed),
        }
    }
}

/// A buffered value read back, with the error type of the map it came from.
struct BufferedDe<E>(Buffered, std::marker::PhantomData<E>);

impl<E> BufferedDe<E> {
    fn new(b: Buffered) -> Self {
        BufferedDe(b, std::marker::PhantomData)
    }
}

impl<'de, E: de::Error> IntoDeserializer<'de, E> for BufferedDe<E> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de, E: de::Error> Deserializer<'de> for BufferedDe<E> {
    type Error = E;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, E> {
        match self.0 {
            Buffered::Unit => v.visit_unit(),
            Buffered::Bool(b) => v.visit_bool(b),
            Buffered::I64(n) => v.visit_i64(n),
            Buffered::U64(n) => v.visit_u64(n),
            Buffered::U128(n) => v.visit_u128(n),
            Buffered::F64(n) => v.visit_f64(n),
            Buffered::Str(s) => v.visit_string(s),
            Buffered::Bytes(b) => v.visit_byte_buf(b),
            Buffered::Seq(xs) => {
                v.visit_seq(de::value::SeqDeserializer::new(xs.into_iter().map(BufferedDe::new)))
            }
            Buffered::Map(es) => v.visit_map(de::value::MapDeserializer::new(
                es.into_iter().map(|(k, x)| (BufferedDe::new(k), BufferedDe::new(x))),
            )),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, E> {
        match self.0 {
            Buffered::Unit => v.visit_none(),
            _ => v.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        v: V,
    ) -> Result<V::Value, E> {
        v.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, E> {
        match self.0 {
            Buffered::Str(s) => v.visit_enum(s.into_deserializer()),
            other => BufferedDe::<E>::new(other).deserialize_any(EnumOnly(name, variants, v)),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

/// An enum read from anything but its name: the visitor's own error.
struct EnumOnly<V>(&'static str, &'static [&'static str], V);

impl<'de, V: Visitor<'de>> Visitor<'de> for EnumOnly<V> {
    type Value = V::Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a variant of {} (one of {:?})", self.0, self.1)
    }
}

/// A value read before `op` was found: what a self-describing input can hold.
#[derive(Debug, Clone, PartialEq)]
pub enum Buffered {
    /// `null` / `None`.
    Unit,
    /// A boolean.
    Bool(bool),
    /// A signed integer.
    I64(i64),
    /// An unsigned integer above `i64`.
    U64(u64),
    /// An integer above `u64` (Python's ints).
    U128(u128),
    /// A float.
    F64(f64),
    /// A string.
    Str(String),
    /// Bytes.
    Bytes(Vec<u8>),
    /// A list.
    Seq(Vec<Buffered>),
    /// An object, in its order.
    Map(Vec<(Buffered, Buffered)>),
}

impl<'de> de::Deserialize<'de> for Buffered {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Buffered, D::Error> {
        d.deserialize_any(BufferedVisitor)
    }
}

struct BufferedVisitor;

impl<'de> Visitor<'de> for BufferedVisitor {
    type Value = Buffered;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_unit<E>(self) -> Result<Buffered, E> {
        Ok(Buffered::Unit)
    }
    fn visit_none<E>(self) -> Result<Buffered, E> {
        Ok(Buffered::Unit)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Buffered, D::Error> {
        <Buffered as de::Deserialize>::deserialize(d)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Buffered, E> {
        Ok(Buffered::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Buffered, E> {
        Ok(Buffered::I64(n))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Buffered, E> {
        Ok(i64::try_from(n).map_or(Buffered::U64(n), Buffered::I64))
    }
    fn visit_u128<E>(self, n: u128) -> Result<Buffered, E> {
        Ok(Buffered::U128(n))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Buffered, E> {
        Ok(Buffered::F64(n))
    }
    fn visit_str<E>(self, s: &str) -> Result<Buffered, E> {
        Ok(Buffered::Str(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> Result<Buffered, E> {
        Ok(Buffered::Str(s))
    }
    fn visit_bytes<E>(self, b: &[u8]) -> Result<Buffered, E> {
        Ok(Buffered::Bytes(b.to_vec()))
    }
    fn visit_seq<S: SeqAccess<'de>>(self, mut s: S) -> Result<Buffered, S::Error> {
        let mut out = Vec::new();
        while let Some(x) = s.next_element()? {
            out.push(x);
        }
        Ok(Buffered::Seq(out))
    }
    fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Buffered, M::Error> {
        let mut out = Vec::new();
        while let Some(e) = m.next_entry()? {
            out.push(e);
        }
        Ok(Buffered::Map(out))
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(remote = "Self", rename_all = "snake_case", deny_unknown_fields)]
    enum Input {
        Add {
            n: u32,
            #[serde(default, with = "crate::machine::bytes::option")]
            tag: Option<Vec<u8>>,
        },
        Id,
    }
    op_first!(Input);

    fn read(text: &str) -> Result<Input, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn op_first_or_later_reads_the_same() {
        let add = Input::Add { n: 7, tag: Some(b"x".to_vec()) };
        assert_eq!(read(r#"{"op":"add","n":7,"tag":"x"}"#), Ok(add));
        let add = Input::Add { n: 7, tag: Some(b"x".to_vec()) };
        assert_eq!(read(r#"{"n":7,"tag":"x","op":"add"}"#), Ok(add));
        assert_eq!(read(r#"{"n":7,"op":"add"}"#), Ok(Input::Add { n: 7, tag: None }));
        assert_eq!(read(r#"{"op":"id"}"#), Ok(Input::Id));
    }

    #[test]
    fn refusals_say_what_is_wrong() {
        let missing = read(r#"{"n":7}"#).unwrap_err();
        assert!(missing.contains("missing field `op`"), "{missing}");
        assert!(read("{}").unwrap_err().contains("missing field `op`"));
        let unknown = read(r#"{"op":"nope","n":1}"#).unwrap_err();
        assert!(unknown.contains("unknown variant `nope`"), "{unknown}");
        let field = read(r#"{"op":"add","n":1,"extra":2}"#).unwrap_err();
        assert!(field.contains("unknown field `extra`"), "{field}");
        let field = read(r#"{"extra":2,"op":"add","n":1}"#).unwrap_err();
        assert!(field.contains("unknown field `extra`"), "{field}");
        let unit = read(r#"{"op":"id","n":1}"#).unwrap_err();
        assert!(unit.contains("unknown field `n`"), "{unit}");
        let ty = read(r#"{"op":"add","n":"seven"}"#).unwrap_err();
        assert!(ty.contains("invalid type"), "{ty}");
        assert!(read(r#"{"n":"seven","op":"add"}"#).unwrap_err().contains("invalid type"));
        assert!(read("[]").unwrap_err().contains("an object tagged by op (Input)"));
        assert!(read(r#"{"op":3}"#).unwrap_err().contains("invalid type"));
    }
}
