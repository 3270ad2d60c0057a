/** Stable error codes, shared with the Rust core, the C library and the Python package. */
export declare const ErrorCode: Readonly<{
  OK: 0;
  UNKNOWN_LEASE: 1;
  LEASE_DENIED: 2;
  LEASE_MAP: 3;
  INVALID_ARGUMENT: 4;
  DECODE: 5;
  INDEFINITE: 6;
}>;
/** Base class of every failure of leasing. */
export declare class LeaseError extends Error {
  constructor(message: string, code?: number, options?: ErrorOptions);
  /** Stable numeric code (see ErrorCode). */
  readonly code: number;
  /** True unless retrying could help (only IndefiniteError is not definite). */
  readonly isDefinite: boolean;
}
/** The lease is unknown to its landlord: never granted, cancelled, or expired. Code 1. */
export declare class UnknownLeaseError extends LeaseError {
  constructor(message?: string, options?: ErrorOptions);
}
/** The landlord refused; a denied renewal leaves the lease as it was. Code 2. */
export declare class LeaseDeniedError extends LeaseError {
  constructor(message?: string, options?: ErrorOptions);
}
/** Some leases of a batch failed; each carries its own error. Code 3. */
export declare class LeaseMapError extends LeaseError {
  constructor(message: string, failures?: Array<[string, LeaseError]>, options?: ErrorOptions);
  /** Each failed lease's cookie and error. */
  readonly failures: Array<{ cookie: string; error: LeaseError }>;
  /** Cookie to error. */
  readonly errors: Map<string, LeaseError>;
}
/** Input that does not decode: malformed, truncated, oversized or of another version. Code 5. */
export declare class DecodeError extends LeaseError {
  constructor(message: string, options?: ErrorOptions);
}
/** An indefinite failure (transport error, time-out): worth retrying. Code 6. */
export declare class IndefiniteError extends LeaseError {
  constructor(message: string, options?: ErrorOptions);
}
/**
 * A call into a leasehold object that is in the middle of another call and cannot serve this one
 * (arguments are converted before an object's state is touched and no JavaScript runs while it
 * is, so callbacks and getters may call back in). Retry after the outer call returns. Code 6.
 */
export declare class ReentrantCallError extends IndefiniteError {
  constructor(message?: string, options?: ErrorOptions);
}
/** A value out of range (NaN, a fraction, a negative other than ANY, past the safe range, a bad setting). Code 4. */
export declare class InvalidArgumentError extends RangeError {
  constructor(message: string, options?: ErrorOptions);
  readonly code: 4;
}
/** An argument of the wrong type. Code 4. */
export declare class ArgumentTypeError extends TypeError {
  constructor(message: string, options?: ErrorOptions);
  readonly code: 4;
}
