// A page loaded before a restart sends its form after it. Env: BASE,
// CHROMIUM, PW, RESTART (a URL the test serves that swaps the UI for a new
// one, as a restart does). Prints one JSON object with what it saw.
const { chromium } = require(process.env.PW);

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--no-first-run", "--disable-quic"],
  });
  const base = process.env.BASE;
  const out = {};
  try {
    const page = await (await browser.newContext()).newPage();
    // No live updates: one after the restart would bring the page's forms
    // the new token (as it does when the stream reconnects in time); this
    // is the page whose form goes before that.
    await page.route("**/ui/live**", (r) => r.abort());
    await page.goto(`${base}/ui/approvals`);
    await page.request.post(process.env.RESTART); // the gateway restarts while the page is open
    const [resp] = await Promise.all([page.waitForNavigation(), page.click('form[action="/ui/approvals/ap1/approve"] button')]);
    out.status = resp.status();
    out.type = resp.headers()["content-type"];
    out.text = (await page.locator("body").innerText()).slice(0, 400);
    out.nav = await page.locator("nav a").count();
    await Promise.all([page.waitForNavigation(), page.click("#reload")]);
    out.back = new URL(page.url()).pathname;
    await Promise.all([page.waitForNavigation(), page.click('form[action="/ui/approvals/ap1/approve"] button')]);
    out.flash = (await page.locator(".flash").innerText()).trim();
    // A request the gateway does not have (a mistyped or forgotten link).
    const miss = await page.goto(`${base}/ui/requests/no-such-request`);
    out.missStatus = miss.status();
    out.missText = (await page.locator("main").innerText().catch(() => "")).slice(0, 300);
    out.missNav = await page.locator("nav a").count();
  } catch (e) {
    out.error = String(e.stack || e);
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out));
})();
