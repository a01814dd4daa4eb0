//! A value as the wire gave it, before it is converted for its column: an event's [`Value`], or
//! the string, bytes, integer or float a codec read and puts straight in.
//!
//! The conversion (`convert::append_values`) asks a value only the questions of [`WireValue`],
//! and each form answers those it can. For a concrete form the answers are known at compile time,
//! so a codec that reads a column's value as, say, a string and puts it as one pays for no value
//! built and matched again: the conversion keeps only the branches a string can take.

use std::borrow::Cow;
use std::fmt::Write;

use crate::digits;
use crate::event::Value;
use crate::schema::mysql;

/// A value in its wire form, borrowed for `'v`.
pub(crate) trait WireValue<'v>: Copy {
    fn is_null(self) -> bool {
        false
    }

    /// The value's text, when the wire gave it as text.
    fn text(self) -> Option<&'v str> {
        None
    }

    /// The bytes of a text or binary value.
    fn bytes(self) -> Option<&'v [u8]> {
        self.text().map(str::as_bytes)
    }

    /// The bytes of a value the wire gave as text, for a parser that takes ASCII alone (numbers,
    /// dates and times), which need not be checked as UTF-8 first.
    fn text_bytes(self) -> Option<&'v [u8]> {
        self.text().map(str::as_bytes)
    }

    /// An integer the wire gave as a number (not as text).
    fn number(self) -> Option<i128> {
        None
    }

    /// A float the wire gave as a number (a float or an integer), or its text.
    fn float(self) -> Option<f64> {
        self.number().map(|v| v as f64).or_else(|| digits::parse_f64(self.text()?))
    }

    /// Writes a number's decimal text, for a text column; false for any other value.
    fn write_number(self, _out: &mut String) -> bool {
        false
    }

    /// The value as an error names it: `value "abc"` (cut short), `value 300`, `bytes`.
    fn describe(self) -> String;

    /// The value as the event model holds it.
    fn to_value(self) -> Value<'v>;

    /// An integer from any wire form, wide enough for the whole u64 and i64 ranges.
    #[inline(always)]
    fn integer(self) -> Option<i128> {
        match self.text_bytes() {
            Some(t) => mysql::parse_integer(t),
            None => self.number(),
        }
    }
}

impl<'v, 'x: 'v> WireValue<'v> for &'v Value<'x> {
    #[inline(always)]
    fn is_null(self) -> bool {
        Value::is_null(self)
    }

    #[inline(always)]
    fn text(self) -> Option<&'v str> {
        match self {
            Value::Text(t) => Some(t),
            _ => None,
        }
    }

    #[inline(always)]
    fn bytes(self) -> Option<&'v [u8]> {
        match self {
            Value::Text(t) => Some(t.as_bytes()),
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }

    #[inline(always)]
    fn number(self) -> Option<i128> {
        match self {
            Value::Int(v) => Some(*v as i128),
            Value::UInt(v) => Some(*v as i128),
            _ => None,
        }
    }

    #[inline(always)]
    fn float(self) -> Option<f64> {
        match self {
            Value::Float32(v) => Some(*v as f64),
            Value::Float64(v) => Some(*v),
            Value::Int(v) => Some(*v as f64),
            Value::UInt(v) => Some(*v as f64),
            Value::Text(t) => digits::parse_f64(t),
            _ => None,
        }
    }

    fn write_number(self, out: &mut String) -> bool {
        match self {
            Value::Int(v) => v.write_number(out),
            Value::UInt(v) => v.write_number(out),
            Value::Float32(v) => v.write_number(out),
            Value::Float64(v) => v.write_number(out),
            _ => false,
        }
    }

    fn describe(self) -> String {
        match self {
            Value::Text(t) => t.as_ref().describe(),
            Value::Int(v) => v.describe(),
            Value::UInt(v) => v.describe(),
            Value::Float32(v) => v.describe(),
            Value::Float64(v) => v.describe(),
            Value::Bytes(b) => b.as_ref().describe(),
            Value::Null => "null".into(),
        }
    }

    fn to_value(self) -> Value<'v> {
        self.clone()
    }
}

impl<'v, 'x: 'v> WireValue<'v> for &'x str {
    #[inline(always)]
    fn text(self) -> Option<&'v str> {
        Some(self)
    }

    fn describe(self) -> String {
        match self.char_indices().nth(40) {
            Some((cut, _)) => format!("value {:?}...", &self[..cut]),
            None => format!("value {self:?}"),
        }
    }

    fn to_value(self) -> Value<'v> {
        Value::Text(Cow::Borrowed(self))
    }
}

impl<'v, 'x: 'v> WireValue<'v> for &'x [u8] {
    #[inline(always)]
    fn bytes(self) -> Option<&'v [u8]> {
        Some(self)
    }

    fn describe(self) -> String {
        format!("a {}-byte binary value", self.len())
    }

    fn to_value(self) -> Value<'v> {
        Value::Bytes(Cow::Borrowed(self))
    }
}

/// Text whose bytes are not yet checked as UTF-8: checked when it is read as text, not when it
/// is parsed (see [`WireValue::text_bytes`]) or taken as bytes.
#[derive(Clone, Copy)]
pub(crate) struct UncheckedText<'x>(pub(crate) &'x [u8]);

impl<'v, 'x: 'v> WireValue<'v> for UncheckedText<'x> {
    #[inline(always)]
    fn text(self) -> Option<&'v str> {
        crate::utf8::check(self.0).ok()
    }

    #[inline(always)]
    fn bytes(self) -> Option<&'v [u8]> {
        Some(self.0)
    }

    #[inline(always)]
    fn text_bytes(self) -> Option<&'v [u8]> {
        Some(self.0)
    }

    fn describe(self) -> String {
        match self.text() {
            Some(text) => text.describe(),
            None => format!("a {}-byte value that is not UTF-8", self.0.len()),
        }
    }

    fn to_value(self) -> Value<'v> {
        match self.text() {
            Some(text) => text.to_value(),
            None => self.0.to_value(),
        }
    }
}

/// Integers and floats as the wire gave them; an integer also answers as a number.
macro_rules! numbers {
    ($($t:ty => $variant:ident $(, number: |$v:ident| $number:expr)?;)*) => {$(
        impl<'v> WireValue<'v> for $t {
            $(
                #[inline(always)]
                fn number(self) -> Option<i128> {
                    let $v = self;
                    $number
                }
            )?

            #[inline(always)]
            fn float(self) -> Option<f64> {
                Some(self as f64)
            }

            fn write_number(self, out: &mut String) -> bool {
                write!(out, "{self}").is_ok()
            }

            fn describe(self) -> String {
                format!("value {self}")
            }

            fn to_value(self) -> Value<'v> {
                Value::$variant(self)
            }
        }
    )*};
}

numbers! {
    i64 => Int, number: |v| Some(v as i128);
    u64 => UInt, number: |v| Some(v as i128);
    f32 => Float32;
    f64 => Float64;
}

/// A NULL on the wire.
#[derive(Clone, Copy)]
pub(crate) struct Null;

impl<'v> WireValue<'v> for Null {
    #[inline(always)]
    fn is_null(self) -> bool {
        true
    }

    fn describe(self) -> String {
        "null".into()
    }

    fn to_value(self) -> Value<'v> {
        Value::Null
    }
}

/// A value, or a NULL (`None`).
impl<'v, T: WireValue<'v>> WireValue<'v> for Option<T> {
    #[inline(always)]
    fn is_null(self) -> bool {
        self.is_none_or(T::is_null)
    }

    #[inline(always)]
    fn text(self) -> Option<&'v str> {
        self?.text()
    }

    #[inline(always)]
    fn bytes(self) -> Option<&'v [u8]> {
        self?.bytes()
    }

    #[inline(always)]
    fn text_bytes(self) -> Option<&'v [u8]> {
        self?.text_bytes()
    }

    #[inline(always)]
    fn number(self) -> Option<i128> {
        self?.number()
    }

    #[inline(always)]
    fn float(self) -> Option<f64> {
        self?.float()
    }

    fn write_number(self, out: &mut String) -> bool {
        self.is_some_and(|v| v.write_number(out))
    }

    fn describe(self) -> String {
        self.map_or_else(|| Null.describe(), T::describe)
    }

    fn to_value(self) -> Value<'v> {
        self.map_or(Value::Null, T::to_value)
    }

    #[inline(always)]
    fn integer(self) -> Option<i128> {
        self?.integer()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Answers = (bool, Option<String>, Option<Vec<u8>>, Option<i128>, Option<u64>, Option<String>, String);

    fn answers<'v>(v: impl WireValue<'v>) -> Answers {
        let mut number = String::new();
        let number = v.write_number(&mut number).then_some(number);
        let text = v.text().map(str::to_owned);
        (
            v.is_null(),
            text,
            v.bytes().map(<[u8]>::to_vec),
            v.integer(),
            v.float().map(f64::to_bits),
            number,
            v.describe(),
        )
    }

    /// Every wire form answers the conversion's questions as the event value of that form does.
    #[test]
    fn each_wire_form_answers_as_its_event_value() {
        let long = "é".repeat(50);
        let cases: [(Value<'_>, Answers); 9] = [
            (Value::Text(Cow::Borrowed("42")), answers("42")),
            (Value::Text(Cow::Borrowed("2.5")), answers("2.5")),
            (Value::Text(Cow::Borrowed(&long)), answers(long.as_str())),
            (Value::Bytes(Cow::Borrowed(b"\xff\x00")), answers(&b"\xff\x00"[..])),
            (Value::Int(-7), answers(-7i64)),
            (Value::UInt(u64::MAX), answers(u64::MAX)),
            (Value::Float32(1.5), answers(1.5f32)),
            (Value::Float64(-0.25), answers(-0.25f64)),
            (Value::Null, answers(Null)),
        ];
        assert_eq!(answers(None::<i64>), answers(Null));
        assert_eq!(answers(Some(Null)), answers(Null));
        assert_eq!(answers(Some("2.5")), answers("2.5"));
        assert_eq!(answers(Some(-7i64)), answers(-7i64));
        assert_eq!(answers(UncheckedText(b"2.5")), answers("2.5"));
        assert_eq!(answers(UncheckedText(long.as_bytes())), answers(long.as_str()));
        let invalid = UncheckedText(b"12\xff");
        assert_eq!(
            (invalid.text(), invalid.bytes(), invalid.text_bytes()),
            (None, Some(&b"12\xff"[..]), invalid.bytes())
        );
        assert_eq!(invalid.to_value(), Value::Bytes(Cow::Borrowed(b"12\xff")));
        for (value, typed) in &cases {
            assert_eq!(&answers(value), typed, "{value:?}");
        }
        assert_eq!(answers(&Value::Text(Cow::Borrowed(&long))).6, format!("value {:?}...", "é".repeat(40)));
        assert_eq!(answers(u64::MAX).3, Some(u64::MAX as i128));
        let as_values = [
            "42".to_value(),
            (&b"\xff"[..]).to_value(),
            (-7i64).to_value(),
            u64::MAX.to_value(),
            1.5f32.to_value(),
            (-0.25f64).to_value(),
            Null.to_value(),
        ];
        let want = [
            Value::Text(Cow::Borrowed("42")),
            Value::Bytes(Cow::Borrowed(b"\xff")),
            Value::Int(-7),
            Value::UInt(u64::MAX),
            Value::Float32(1.5),
            Value::Float64(-0.25),
            Value::Null,
        ];
        assert_eq!(as_values, want);
    }
}
