// Walks every page of the reach UI a link leads to, from the requests
// list, in Debian's chromium through playwright-core, as a user clicking
// through would (a request's fold links left out: their combinations are
// many, and TestBrowser folds). Env: BASE, CHROMIUM, PW, SECRETS (the
// values no page may show, comma-separated). Prints one JSON object with
// what it saw; the Go test asserts on it.
const { chromium } = require(process.env.PW);

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--no-first-run", "--disable-quic"],
  });
  const base = process.env.BASE;
  const secrets = process.env.SECRETS.split(",");
  const out = { pages: 0, snags: [], auditSeqs: [], auditPages: 0 };
  try {
    const page = await (await browser.newContext({ viewport: { width: 1200, height: 900 } })).newPage();
    page.on("pageerror", (e) => out.snags.push(`${page.url()}: script error ${e.message}`));
    const seen = new Set();
    const queue = [`${base}/ui/`];
    while (queue.length && seen.size < 300) {
      const u = queue.shift();
      if (seen.has(u)) continue;
      seen.add(u);
      const path = u.slice(base.length);
      const resp = await page.goto(u, { waitUntil: "load" });
      const status = resp.status(), headers = resp.headers(), type = (headers["content-type"] || "").split(";")[0];
      const body = await resp.text();
      out.pages++;
      if (status >= 400) out.snags.push(`${path}: ${status} ${body.slice(0, 120)}`);
      if (type === "text/html" && headers["x-frame-options"] !== "DENY") out.snags.push(`${path}: no X-Frame-Options`);
      if (type !== "application/json" && /^\s*[{[]/.test(body)) out.snags.push(`${path}: raw JSON as ${type}`);
      for (const s of secrets) if (body.includes(s)) out.snags.push(`${path}: shows the secret ${s}`);
      if (path === "/ui/requests/secret") out.masked = body.includes("&#34;password&#34;:&#34;[REDACTED]&#34;");
      // A request's graph, as the UI draws it and as the API exports it.
      const m = new URL(u).pathname.match(/^\/ui\/requests\/([^/]+)$/);
      if (m && !new URL(u).search) {
        out.exports = (out.exports || 0) + 1;
        for (const x of [`${u}/graph.svg`, `${base}/v1/requests/${m[1]}`, `${base}/v1/requests/${m[1]}/graph`,
                         `${base}/v1/requests/${m[1]}/graph?format=dot`, `${base}/v1/requests/${m[1]}/graph?format=svg`,
                         `${base}/v1/audit?request=${m[1]}`]) {
          const r = await page.request.get(x);
          const text = await r.text();
          if (r.status() !== 200) out.snags.push(`${x.slice(base.length)}: ${r.status()} ${text.slice(0, 120)}`);
          for (const s of secrets) if (text.includes(s)) out.snags.push(`${x.slice(base.length)}: shows the secret ${s}`);
        }
      }
      if (type !== "text/html") continue;
      const inPage = await page.evaluate(() => ({
        links: [...document.querySelectorAll("a[href]")].map((a) => new URL(a.getAttribute("href"), location.href).href),
        bare: [...document.querySelectorAll("form")].filter((f) => f.method === "post" && !f.querySelector('input[name="csrf"]')).map((f) => f.getAttribute("action")),
        svg: [...document.querySelectorAll("svg")].map((s) => s.outerHTML).join(""),
        seqs: location.pathname === "/ui/audit" ? [...document.querySelectorAll("main table tbody tr")].map((tr) => Number(tr.cells[0].innerText)) : [],
      }));
      for (const a of inPage.bare) out.snags.push(`${path}: a form posting to ${a} without the form token`);
      for (const s of secrets) if (inPage.svg.includes(s)) out.snags.push(`${path}: its graph shows the secret ${s}`);
      if (new URL(u).pathname === "/ui/audit" && !new URL(u).search.includes("request=")) {
        out.auditPages++;
        out.auditSeqs.push(...inPage.seqs);
      }
      for (const l of inPage.links) {
        const x = l.split("#")[0];
        if (x.startsWith(base) && !seen.has(x) && !x.includes("fold=") && !x.includes("/ui/logout")) queue.push(x);
      }
    }
    out.left = queue.length;
  } catch (e) {
    out.error = String(e.stack || e);
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out));
})();
