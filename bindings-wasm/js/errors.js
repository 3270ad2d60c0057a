// Error classes of leasehold. Every error carries `code`, the stable number shared with the
// Rust core, the C library and the Python package (ErrorCode below).

/** Stable error codes (never renumbered; new ones are appended). */
export const ErrorCode = Object.freeze({
  OK: 0,
  UNKNOWN_LEASE: 1,
  LEASE_DENIED: 2,
  LEASE_MAP: 3,
  INVALID_ARGUMENT: 4,
  DECODE: 5,
  INDEFINITE: 6,
});

/** Base class of every failure of leasing (unknown lease, denied, batch, decode, indefinite). */
export class LeaseError extends Error {
  constructor(message, code = ErrorCode.DECODE, options) {
    super(message, options);
    this.code = code;
  }
  get name() {
    return this.constructor.name;
  }
  /** True unless retrying could help (only IndefiniteError is not definite). */
  get isDefinite() {
    return this.code !== ErrorCode.INDEFINITE;
  }
}

/** The lease is unknown to its landlord: never granted, cancelled, or expired. */
export class UnknownLeaseError extends LeaseError {
  constructor(message = 'unknown lease', options) {
    super(message, ErrorCode.UNKNOWN_LEASE, options);
  }
}

/** The landlord refused; a denied renewal leaves the lease as it was. */
export class LeaseDeniedError extends LeaseError {
  constructor(message = 'lease denied', options) {
    super(message, ErrorCode.LEASE_DENIED, options);
  }
}

/**
 * Some leases of a batch failed; the others succeeded. `failures` lists `{cookie, error}` for
 * each failed lease, `errors` maps cookie to error.
 */
export class LeaseMapError extends LeaseError {
  constructor(message, failures = [], options) {
    super(message, ErrorCode.LEASE_MAP, options);
    this.failures = failures.map(([cookie, error]) => ({ cookie, error }));
    this.errors = new Map(failures);
  }
}

/** Bytes or text that do not decode: malformed, truncated, oversized or of another version. */
export class DecodeError extends LeaseError {
  constructor(message, options) {
    super(message, ErrorCode.DECODE, options);
  }
}

/** An indefinite failure (transport error, time-out): worth retrying. */
export class IndefiniteError extends LeaseError {
  constructor(message, options) {
    super(message, ErrorCode.INDEFINITE, options);
  }
}

/**
 * A call into a leasehold object that is in the middle of another call and cannot serve this
 * one. The binding converts arguments before it touches an object's state and runs no
 * JavaScript while it does, so getters, callbacks and handlers may call back in; this error only
 * reports what would otherwise be a re-entrant borrow. Retrying after the outer call returns works.
 */
export class ReentrantCallError extends IndefiniteError {
  constructor(message = 're-entrant call', options) {
    super(message, options);
  }
}

/** A value out of range: NaN, a fraction, a negative duration other than ANY, an unsafe integer, a bad setting. */
export class InvalidArgumentError extends RangeError {
  constructor(message, options) {
    super(message, options);
    this.code = ErrorCode.INVALID_ARGUMENT;
  }
  get name() {
    return 'InvalidArgumentError';
  }
}

/** An argument of the wrong type (a string where a number of ms was expected, ...). */
export class ArgumentTypeError extends TypeError {
  constructor(message, options) {
    super(message, options);
    this.code = ErrorCode.INVALID_ARGUMENT;
  }
  get name() {
    return 'ArgumentTypeError';
  }
}

/** Builds the error for a (kind, code, message, failures) from the WebAssembly side. */
export function makeError(kind, code, message, failures) {
  if (kind === 'type') return new ArgumentTypeError(message);
  if (kind === 'range') return new InvalidArgumentError(message);
  if (kind === 'busy') return new ReentrantCallError(message);
  switch (code) {
    case ErrorCode.UNKNOWN_LEASE:
      return new UnknownLeaseError(message);
    case ErrorCode.LEASE_DENIED:
      return new LeaseDeniedError(message);
    case ErrorCode.LEASE_MAP:
      return new LeaseMapError(message, failures ?? []);
    case ErrorCode.INVALID_ARGUMENT:
      return new InvalidArgumentError(message);
    case ErrorCode.INDEFINITE:
      return new IndefiniteError(message);
    default:
      return new DecodeError(message);
  }
}
