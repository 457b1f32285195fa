// Drives the dead letters page of the reach UI in Debian's chromium through
// playwright-core. Env: BASE (reach), EVIL (a page of another origin that
// posts a dismissal to reach), CHROMIUM, PW, RETRY and DISMISS (the dead
// letters' ids). Prints one JSON object with what it saw.
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
    const page = await (await browser.newContext({ viewport: { width: 1200, height: 900 } })).newPage();
    const row = (id) => page.locator(`tr[data-deadletter="${id}"]`);
    // From the requests list, by the navigation.
    await page.goto(`${base}/ui/`);
    await Promise.all([page.waitForNavigation(), page.click('nav a[href="/ui/deadletters"]')]);
    out.path = new URL(page.url()).pathname;
    out.listed = await page.locator("tr[data-deadletter]").evaluateAll((rs) => rs.map((r) => r.dataset.deadletter));
    out.page = await page.content();

    // Another origin's page posts a dismissal: refused, nothing dismissed.
    const resp = await page.goto(process.env.EVIL);
    await page.waitForURL((u) => u.href.startsWith(base));
    out.crossStatus = (await page.evaluate(() => document.body.innerText)).slice(0, 200);

    // Retry one; dismiss the other with a note.
    await page.goto(`${base}/ui/deadletters`);
    await Promise.all([page.waitForURL(/flash=/), row(process.env.RETRY).locator("button.retry").click()]);
    out.retryFlash = (await page.locator(".flash").innerText()).trim();
    await page.goto(`${base}/ui/deadletters`);
    await row(process.env.DISMISS).locator('input[name="note"]').fill("refunded by hand");
    await Promise.all([page.waitForNavigation(), row(process.env.DISMISS).locator("button.dismiss").click()]);
    out.dismissFlash = (await page.locator(".flash").innerText()).trim();
    await page.goto(`${base}/ui/deadletters`);
    out.openAfter = await page.locator("tr[data-deadletter]").count();
    out.overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  } catch (e) {
    out.error = String(e.stack || e) + " at " + (browser.contexts()[0]?.pages()[0]?.url() || "") + " " + ((await browser.contexts()[0]?.pages()[0]?.evaluate(() => document.body.innerText).catch(() => "")) || "").slice(0, 300);
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out));
})();
