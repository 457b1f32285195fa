// Stops a request from reach's UI, in Debian's chromium through
// playwright-core, while its model turn streams: the request's page, a
// reason typed in its stop form, the cancel button pressed.
// Env: BASE, CHROMIUM, PW, REQUEST (the request's id), REASON. Prints one
// JSON object with what it saw: the request's state on the page after the
// stop, and how many stop forms it still shows; the Go test asserts on it.
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
    const page = await browser.newPage();
    await page.goto(`${base}/ui/requests/${encodeURIComponent(process.env.REQUEST)}`);
    out.stateBefore = (await page.locator("#state").innerText()).trim();
    const form = page.locator('form:has(button[value="cancel"])');
    await form.locator('input[name="reason"]').fill(process.env.REASON);
    await Promise.all([page.waitForNavigation(), form.locator("button").click()]);
    out.stateAfter = (await page.locator("#state").innerText()).trim();
    out.stopForms = await page.locator('form[action^="/ui/stop/"]').count();
    // The page read again: the stop holds, not just the answer to the form.
    await page.reload();
    out.stateReloaded = (await page.locator("#state").innerText()).trim();
  } catch (e) {
    out.error = String(e && e.stack || e);
    try { out.error += "\n" + (await browser.contexts()[0].pages()[0].content()).slice(0, 3000); } catch (_) {}
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(out));
  process.exit(0);
})();
