// One host timer that a driver re-arms at the deadline its sans-I/O object asks for.
// Never keeps Node alive by itself (unref), and close() clears it.

const MAX_DELAY = 2 ** 31 - 1; // setTimeout's ceiling (about 24.8 days)

export class DeadlineTimer {
  #fire;
  #now;
  #keepAlive;
  #timer = null;
  #due = Infinity;
  #closed = false;

  constructor(fire, now, keepAlive = false) {
    this.#fire = fire;
    this.#now = now;
    this.#keepAlive = keepAlive;
  }

  /** Arms the timer for `due` (ms on the driver's clock), unless it already fires no later. */
  arm(due) {
    if (this.#closed) return;
    if (due === undefined || due === null) {
      this.clear();
      return;
    }
    if (this.#timer !== null && this.#due <= due) return;
    this.clear();
    this.#due = due;
    const delay = Math.min(MAX_DELAY, Math.max(0, due - this.#now()));
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#due = Infinity;
      if (!this.#closed) this.#fire();
    }, delay);
    if (!this.#keepAlive && typeof this.#timer?.unref === 'function') this.#timer.unref();
  }

  clear() {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#due = Infinity;
  }

  close() {
    this.#closed = true;
    this.clear();
  }

  get closed() {
    return this.#closed;
  }
}
