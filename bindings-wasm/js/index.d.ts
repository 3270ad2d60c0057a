// Types of the `leasehold` package (the same for the Node and the browser entry).
export * from './api.js';
