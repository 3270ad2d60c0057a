//! Conversions between JavaScript values and core types, and the errors they raise.
//!
//! Times and durations are JavaScript numbers of milliseconds. `FOREVER` (`i64::MAX`) is not a
//! safe integer, so it crosses the boundary as `Infinity` both ways; `ANY` is `-1`. Any other
//! number must be a safe integer: NaN, fractions, `-Infinity` and values past
//! `Number.MAX_SAFE_INTEGER` are refused with a `RangeError`, a non-number with a `TypeError`.
//! Core's own rules (for example "negative durations other than ANY") stay in core.

use std::cell::RefCell;

use js_sys::{Array, Function, Object, Reflect, Uint8Array};
use leasehold::{Cookie, ErrorCode, LandlordId, LeaseError, FOREVER};
use wasm_bindgen::prelude::*;

/// `Number.MAX_SAFE_INTEGER`.
pub const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

thread_local! {
    static ERROR_FACTORY: RefCell<Option<Function>> = const { RefCell::new(None) };
}

/// Installs the function that turns (kind, code, message, failures) into an `Error` subclass.
///
/// Called once by the package's JavaScript entry; without it errors are plain `Error`s with a
/// `code` property.
#[wasm_bindgen(js_name = "__setErrorFactory", skip_typescript)]
pub fn set_error_factory(factory: Function) {
    ERROR_FACTORY.with(|f| *f.borrow_mut() = Some(factory));
}

fn make_error(kind: &str, code: i32, message: &str, failures: JsValue) -> JsValue {
    let made = ERROR_FACTORY.with(|f| {
        f.borrow().as_ref().and_then(|f| {
            let args = Array::of4(
                &JsValue::from_str(kind),
                &JsValue::from(code),
                &JsValue::from_str(message),
                &failures,
            );
            f.apply(&JsValue::UNDEFINED, &args).ok()
        })
    });
    made.unwrap_or_else(|| {
        let e: JsValue = match kind {
            "type" => js_sys::TypeError::new(message).into(),
            "range" => js_sys::RangeError::new(message).into(),
            _ => js_sys::Error::new(message).into(),
        };
        let _ = Reflect::set(&e, &"code".into(), &JsValue::from(code));
        e
    })
}

/// A `TypeError` (code InvalidArgument): the argument is not of the expected type.
pub fn type_error(message: impl AsRef<str>) -> JsValue {
    make_error("type", ErrorCode::InvalidArgument as i32, message.as_ref(), JsValue::UNDEFINED)
}

/// A `RangeError` (code InvalidArgument): the argument has the right type but a bad value.
pub fn range_error(message: impl AsRef<str>) -> JsValue {
    make_error("range", ErrorCode::InvalidArgument as i32, message.as_ref(), JsValue::UNDEFINED)
}

/// The JavaScript form of a core error: the matching `LeaseError` subclass with its code.
pub fn lease_error(e: &LeaseError) -> JsValue {
    let failures = match e {
        LeaseError::LeaseMap(list) => {
            let arr = Array::new();
            for f in list {
                let pair = Array::of2(&cookie_out(f.cookie), &lease_error(&f.error));
                arr.push(&pair);
            }
            arr.into()
        }
        _ => JsValue::UNDEFINED,
    };
    let message = match e {
        LeaseError::UnknownLease => "unknown lease".to_string(),
        other => other.to_string(),
    };
    make_error("lease", e.code() as i32, &message, failures)
}

/// Maps a core result's error to JavaScript.
pub fn js<T>(r: leasehold::Result<T>) -> Result<T, JsValue> {
    r.map_err(|e| lease_error(&e))
}

fn describe(v: &JsValue) -> String {
    if v.is_undefined() {
        "undefined".into()
    } else if v.is_null() {
        "null".into()
    } else if let Some(s) = v.as_string() {
        format!("the string {:?}", s.chars().take(40).collect::<String>())
    } else if v.is_bigint() {
        "a bigint".into()
    } else if v.is_function() {
        "a function".into()
    } else if v.is_object() {
        "an object".into()
    } else {
        format!("{:?}", v).chars().take(40).collect()
    }
}

/// A number of milliseconds (time or duration) from JavaScript.
///
/// `Infinity` is `FOREVER`; any other value must be a safe integer (negative values pass on to
/// core, which knows which negatives mean something).
pub fn ms_in(v: &JsValue, what: &str) -> Result<i64, JsValue> {
    if let Some(x) = v.as_f64() {
        return ms_from_f64(x, what);
    }
    if v.is_bigint() {
        // Exact 64-bit values (what `ms_out` gives past the safe range) are taken as they are.
        let b: js_sys::BigInt = v.clone().unchecked_into();
        return i64::try_from(b)
            .map_err(|_| range_error(format!("{what} bigint does not fit in 64 signed bits")));
    }
    Err(type_error(format!("{what} must be a number of milliseconds, got {}", describe(v))))
}

/// Like [`ms_in`] for an already-numeric value.
pub fn ms_from_f64(x: f64, what: &str) -> Result<i64, JsValue> {
    ms_from_f64_core(x, what).map_err(|e| range_error(e.detail()))
}

/// Like [`ms_from_f64`], with the refusal as a core `InvalidArgument` error (no JavaScript
/// object is made, so it can be kept for later).
pub fn ms_from_f64_core(x: f64, what: &str) -> Result<i64, LeaseError> {
    let bad = |m: String| Err(LeaseError::InvalidArgument(m));
    if x.is_nan() {
        return bad(format!("{what} must be a number of milliseconds, got NaN"));
    }
    if x == f64::INFINITY {
        return Ok(FOREVER);
    }
    if x == f64::NEG_INFINITY {
        return bad(format!("{what} cannot be -Infinity"));
    }
    if x.fract() != 0.0 {
        return bad(format!("{what} must be a whole number of milliseconds, got {x}"));
    }
    if x.abs() > MAX_SAFE {
        return bad(format!(
            "{what} {x} is past Number.MAX_SAFE_INTEGER (use Infinity for FOREVER)"
        ));
    }
    Ok(x as i64)
}

/// A point in time (`now`) from JavaScript: any value [`ms_in`] takes (core accepts every
/// 64-bit time, negative clocks included, and saturates).
pub fn now_in(v: &JsValue) -> Result<i64, JsValue> {
    ms_in(v, "now")
}

/// One `[cookie, duration]` pair or `{cookie, duration}` object of a renewal batch.
pub fn item_in(v: &JsValue) -> Result<(leasehold::Cookie, i64), JsValue> {
    if is_array(v) {
        return Ok((
            cookie_in(&Reflect::get_u32(v, 0)?)?,
            ms_in(&Reflect::get_u32(v, 1)?, "duration")?,
        ));
    }
    if v.is_object() {
        return Ok((cookie_in(&get(v, "cookie")?)?, ms_in(&get(v, "duration")?, "duration")?));
    }
    Err(type_error(format!(
        "a renewal item must be [cookie, duration] or {{cookie, duration}}, got {}",
        describe(v)
    )))
}

/// A time or duration for JavaScript: a number, `Infinity` for `FOREVER`, and a bigint for
/// the values a double cannot hold exactly (past `Number.MAX_SAFE_INTEGER`, only reachable by
/// saturating arithmetic near `FOREVER`, some 285 000 years out). `ms_in` takes all three back.
pub fn ms_out(x: i64) -> JsValue {
    if x == FOREVER {
        JsValue::from(f64::INFINITY)
    } else if (x as f64).abs() <= MAX_SAFE {
        JsValue::from(x as f64)
    } else {
        js_sys::BigInt::from(x).into()
    }
}

/// A count (a size, a budget) from JavaScript: a non-negative safe integer. Counts past what
/// the 32-bit WebAssembly `usize` holds mean "no limit" and saturate.
pub fn count_in(v: &JsValue, what: &str) -> Result<usize, JsValue> {
    Ok(usize::try_from(u64_in(v, what)?).unwrap_or(usize::MAX))
}

/// A non-negative safe integer from JavaScript, as `u64`.
pub fn u64_in(v: &JsValue, what: &str) -> Result<u64, JsValue> {
    let x = v.as_f64().ok_or_else(|| {
        type_error(format!("{what} must be a non-negative integer, got {}", describe(v)))
    })?;
    if x.is_nan() || x < 0.0 || x.fract() != 0.0 || x > MAX_SAFE {
        return Err(range_error(format!("{what} must be a non-negative safe integer, got {x}")));
    }
    Ok(x as u64)
}

/// A cookie from JavaScript: 32 hex digits.
pub fn cookie_in(v: &JsValue) -> Result<Cookie, JsValue> {
    match v.as_string() {
        Some(s) => s.parse().map_err(|e: LeaseError| range_error(e.detail())),
        None => Err(type_error(format!(
            "a cookie must be a string of 32 hex digits, got {}",
            describe(v)
        ))),
    }
}

/// A cookie for JavaScript.
pub fn cookie_out(c: Cookie) -> JsValue {
    JsValue::from_str(&c.to_string())
}

/// A landlord id from JavaScript: 16 hex digits, or a non-negative safe integer.
pub fn landlord_in(v: &JsValue) -> Result<LandlordId, JsValue> {
    if let Some(s) = v.as_string() {
        return s.parse().map_err(|e: LeaseError| range_error(e.detail()));
    }
    if v.as_f64().is_some() {
        return Ok(LandlordId(u64_in(v, "landlord id")?));
    }
    if v.is_bigint() {
        let b: js_sys::BigInt = v.clone().unchecked_into();
        return u64::try_from(b)
            .map(LandlordId)
            .map_err(|_| range_error("landlord id bigint must fit in 64 unsigned bits"));
    }
    Err(type_error(format!(
        "a landlord id must be 16 hex digits or a non-negative integer, got {}",
        describe(v)
    )))
}

/// The error thrown when a binding object is called while it is already in use further up the
/// stack and the call cannot be served (only reachable if JavaScript runs inside the binding,
/// which the binding avoids by converting arguments before it borrows its state).
pub fn busy_error(what: &str) -> JsValue {
    make_error(
        "busy",
        ErrorCode::Indefinite as i32,
        &format!("re-entrant call: this {what} is in the middle of another call; call again after it returns"),
        JsValue::UNDEFINED,
    )
}

/// How many bytes a value handed in as bytes or text will take, read without copying it: the
/// byte length of a `Uint8Array`, `ArrayBuffer` or other view; for a string, its length in
/// UTF-16 units, which is a lower bound on its UTF-8 length (`exact` is then false).
/// `None` for anything else (the conversion then reports the type).
pub fn input_len(v: &JsValue) -> Option<(usize, bool)> {
    if let Some(s) = v.dyn_ref::<js_sys::JsString>() {
        return Some((s.length() as usize, false));
    }
    if let Some(a) = v.dyn_ref::<Uint8Array>() {
        return Some((a.length() as usize, true));
    }
    if let Some(b) = v.dyn_ref::<js_sys::ArrayBuffer>() {
        return Some((b.byte_length() as usize, true));
    }
    if ArrayBuffer_is_view(v) {
        let len = Reflect::get(v, &"byteLength".into()).ok()?.as_f64()?;
        return Some((len as usize, true));
    }
    None
}

/// The decode error for a message of `len` bytes (at least `len` when `exact` is false) over
/// the limit of `max`: the core's own check (`Limits::check_message_size`) when the length is
/// exact; for text, whose UTF-8 length is only bounded from below here, the same words with
/// "at least".
pub fn oversized(len: usize, exact: bool, max: usize) -> LeaseError {
    let limits = leasehold::Limits { max_message_bytes: max, ..Default::default() };
    match limits.check_message_size(len) {
        Err(e) if exact => e,
        _ => LeaseError::Decode(format!(
            "message is at least {len} bytes, more than the {max} allowed"
        )),
    }
}

/// Text or bytes for a wire decoder limited to `max` bytes: checked against the limit
/// *before* anything is copied into WebAssembly memory (a 100 MB body must not grow the
/// module's memory, which never shrinks). `Ok(Err(_))` is an oversized message.
pub fn wire_in(
    v: &JsValue,
    max: usize,
    what: &str,
) -> Result<std::result::Result<Vec<u8>, LeaseError>, JsValue> {
    if let Some((len, exact)) = input_len(v) {
        if len > max {
            return Ok(Err(oversized(len, exact, max)));
        }
    }
    text_or_bytes_in(v, what).map(Ok)
}

/// Bytes from JavaScript of exactly `want` bytes (a seed, a key): the length is checked before
/// the copy.
pub fn fixed_bytes_in(v: &JsValue, want: usize, what: &str) -> Result<Vec<u8>, JsValue> {
    if v.as_string().is_none() {
        if let Some((len, _)) = input_len(v) {
            if len != want {
                return Err(range_error(format!("{what} must be {want} bytes, got {len}")));
            }
        }
    }
    let b = bytes_in(v, what)?;
    if b.len() != want {
        return Err(range_error(format!("{what} must be {want} bytes, got {}", b.len())));
    }
    Ok(b)
}

/// Bytes from JavaScript: a `Uint8Array` (or any `ArrayBuffer` view / `ArrayBuffer`).
///
/// Runs no JavaScript that could throw through the module: proxies are refused (they are not
/// views), properties are read with `Reflect.get` and the copy is a `TypedArray.prototype.set`
/// whose exceptions come back as errors.
pub fn bytes_in(v: &JsValue, what: &str) -> Result<Vec<u8>, JsValue> {
    let view: Uint8Array = if ArrayBuffer_is_view(v) {
        if v.is_instance_of::<Uint8Array>() {
            v.clone().unchecked_into()
        } else {
            let buf = Reflect::get(v, &"buffer".into())?;
            let off = Reflect::get(v, &"byteOffset".into())?;
            let len = Reflect::get(v, &"byteLength".into())?;
            Reflect::construct(&uint8_array_ctor(), &Array::of3(&buf, &off, &len))?.unchecked_into()
        }
    } else if v.is_instance_of::<js_sys::ArrayBuffer>() {
        Reflect::construct(&uint8_array_ctor(), &Array::of1(v))?.unchecked_into()
    } else {
        return Err(type_error(format!("{what} must be a Uint8Array, got {}", describe(v))));
    };
    let len = Reflect::get(&view, &"byteLength".into())?.as_f64().unwrap_or(0.0);
    if !(0.0..=u32::MAX as f64).contains(&len) {
        return Err(range_error(format!("{what}: bad byteLength {len}")));
    }
    let mut out = vec![0u8; len as usize];
    // SAFETY: `out` is not touched (nor memory allocated) while the view is alive.
    let dst = unsafe { Uint8Array::view_mut_raw(out.as_mut_ptr(), out.len()) };
    set_catch(&dst, &view)?;
    Ok(out)
}

thread_local! {
    /// `Uint8Array`, looked up once.
    static UINT8_ARRAY: Function = Reflect::get(&js_sys::global(), &"Uint8Array".into())
        .ok()
        .and_then(|f| f.dyn_into().ok())
        .expect("Uint8Array exists");
}

fn uint8_array_ctor() -> Function {
    UINT8_ARRAY.with(|f| f.clone())
}

#[wasm_bindgen]
extern "C" {
    /// `dst.set(src)`, with its exceptions (a source longer than `dst`, a getter that throws)
    /// returned instead of unwinding through the module.
    #[wasm_bindgen(catch, js_namespace = ["Uint8Array", "prototype", "set"], js_name = call)]
    fn set_catch(dst: &Uint8Array, src: &Uint8Array) -> Result<(), JsValue>;
    /// `Array.isArray`, which throws for a revoked proxy.
    #[wasm_bindgen(catch, js_namespace = Array, js_name = isArray)]
    fn is_array_catch(v: &JsValue) -> Result<bool, JsValue>;
}

/// `Array.isArray(v)`, false where it would throw.
pub fn is_array(v: &JsValue) -> bool {
    is_array_catch(v).unwrap_or(false)
}

#[allow(non_snake_case)]
fn ArrayBuffer_is_view(v: &JsValue) -> bool {
    js_sys::ArrayBuffer::is_view(v)
}

/// Text or bytes from JavaScript (a string is taken as UTF-8).
pub fn text_or_bytes_in(v: &JsValue, what: &str) -> Result<Vec<u8>, JsValue> {
    match v.as_string() {
        Some(s) => Ok(s.into_bytes()),
        None => bytes_in(v, what),
    }
}

/// A plain object property (undefined if absent).
pub fn get(o: &JsValue, key: &str) -> Result<JsValue, JsValue> {
    if !o.is_object() {
        return Err(type_error(format!("expected an object, got {}", describe(o))));
    }
    Reflect::get(o, &JsValue::from_str(key))
}

/// Sets a property on a fresh object.
pub fn set(o: &Object, key: &JsValue, v: &JsValue) {
    let _ = Reflect::set(o, key, v);
}

/// A new empty object.
pub fn obj() -> Object {
    Object::new()
}

/// An encoding name from JavaScript: `"json"` or `"binary"` (default `"binary"`).
pub fn encoding_in(v: &JsValue) -> Result<leasehold::Encoding, JsValue> {
    if v.is_undefined() {
        return Ok(leasehold::Encoding::Binary);
    }
    match v.as_string().as_deref() {
        Some("json") => Ok(leasehold::Encoding::Json),
        Some("binary") => Ok(leasehold::Encoding::Binary),
        Some(s) => Err(range_error(format!("encoding must be \"json\" or \"binary\", got {s:?}"))),
        None => {
            Err(type_error(format!("encoding must be \"json\" or \"binary\", got {}", describe(v))))
        }
    }
}

/// An array from JavaScript.
pub fn array_in(v: &JsValue, what: &str) -> Result<Array, JsValue> {
    if is_array(v) {
        Ok(v.clone().unchecked_into())
    } else {
        Err(type_error(format!("{what} must be an array, got {}", describe(v))))
    }
}

/// The elements of a JavaScript array, read with `Reflect.get` so that a proxy or a getter
/// that throws gives an error rather than unwinding through the module.
pub fn array_items(v: &JsValue, what: &str) -> Result<Vec<JsValue>, JsValue> {
    let arr = array_in(v, what)?;
    let len = Reflect::get(&arr, &"length".into())?.as_f64().unwrap_or(0.0);
    if !(0.0..=u32::MAX as f64).contains(&len) {
        return Err(range_error(format!("{what}: bad length {len}")));
    }
    let len = len as u32;
    let mut out = Vec::with_capacity(len.min(1 << 16) as usize);
    for i in 0..len {
        out.push(Reflect::get_u32(&arr, i)?);
    }
    Ok(out)
}

/// Property-name strings made once, so hot paths do not re-create them.
pub struct Keys {
    pub cookie: JsValue,
    pub duration: JsValue,
    pub expiration: JsValue,
    pub resource: JsValue,
    pub ok: JsValue,
    pub value: JsValue,
    pub error: JsValue,
}

thread_local! {
    /// Shared property keys.
    pub static KEYS: Keys = Keys {
        cookie: "cookie".into(),
        duration: "duration".into(),
        expiration: "expiration".into(),
        resource: "resource".into(),
        ok: "ok".into(),
        value: "value".into(),
        error: "error".into(),
    };
}

/// `{ok: true, value}` or `{ok: false, error}`: one lease's outcome in a batch.
pub fn outcome<T>(r: leasehold::Result<T>, f: impl FnOnce(T) -> JsValue) -> JsValue {
    let o = obj();
    KEYS.with(|k| match r {
        Ok(t) => {
            set(&o, &k.ok, &JsValue::TRUE);
            set(&o, &k.value, &f(t));
        }
        Err(e) => {
            set(&o, &k.ok, &JsValue::FALSE);
            set(&o, &k.error, &lease_error(&e));
        }
    });
    o.into()
}

#[cfg(test)]
mod tests {
    use leasehold::{Encoding, Limits, Request};

    /// The binding's early size check words its error exactly as the core does.
    #[test]
    fn oversized_matches_core() {
        let limits = Limits { max_message_bytes: 8, ..Limits::default() };
        let core = Request::decode(&[0u8; 9], Encoding::Binary, &limits).unwrap_err();
        assert_eq!(super::oversized(9, true, 8).to_string(), core.to_string());
        let text = super::oversized(9, false, 8).to_string();
        assert_eq!(text, core.to_string().replace("is 9", "is at least 9"));
    }
}
