// The SharedWorker of `leasehold/tabs` (one per origin): hosts the landlords that tabs lease names
// from, speaking the wire protocol over each tab's MessagePort. Started by tabs.js as
// `new SharedWorker(new URL('./tabs-worker.js', import.meta.url), {type: 'module', name: 'leasehold-tabs'})`.
//
// The `connect` listener is added before anything is awaited (the WebAssembly module loads with
// top-level await, and a connect event fired before a listener exists would be lost); ports wait,
// unstarted, until the host is ready.

const ready = (async () => {
  const { TabsHost, LOCK_PREFIX } = await import('./tabs-host.js');
  const host = new TabsHost();
  // Held for the worker's whole life: a tab whose request for it is granted knows the worker is gone.
  if (self.navigator?.locks) {
    await new Promise((resolve) => {
      self.navigator.locks
        .request(`${LOCK_PREFIX}:worker:${host.instance}`, () => {
          resolve();
          return new Promise(() => {});
        })
        .catch(() => resolve());
    });
  }
  return host;
})();

self.addEventListener('connect', (event) => {
  const port = event.ports[0];
  ready.then(
    (host) => {
      let client = null;
      port.addEventListener('message', (m) => {
        const msg = m.data;
        if (msg?.t === 'hello') client = { id: String(msg.tab), post: (x) => port.postMessage(x) };
        if (client) host.receive(client, msg);
      });
      port.start();
    },
    (err) => port.postMessage({ t: 'fatal', message: String(err?.message ?? err) }),
  );
});
