// Preloaded with `node --require` by the npm interoperability test: a server
// that listens without naming a host (as server-everything does) binds to
// 127.0.0.1 only, so the test never listens on every interface.
"use strict";
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  if (typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port))) {
    if (typeof args[1] !== "string") {
      args.splice(1, 0, "127.0.0.1");
    }
  } else if (port && typeof port === "object" && port.host === undefined && port.path === undefined) {
    args[0] = { ...port, host: "127.0.0.1" };
  }
  return listen.apply(this, args);
};
