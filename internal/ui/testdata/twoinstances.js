// Two reach UIs on 127.0.0.1, on two ports, in one browser context (one
// cookie jar): signs in to A, then to B, then opens A again. Env: A, B
// (server URLs), KEY_A, KEY_B, CHROMIUM, PW. Prints what it saw as JSON.
const { chromium } = require(process.env.PW);

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--no-first-run", "--disable-quic"],
  });
  const out = {};
  try {
    const context = await browser.newContext();
    const page = await context.newPage();
    const signIn = async (base, key) => {
      await page.goto(`${base}/ui/`);
      await page.fill("#credential", key);
      await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
      return (await page.locator("#user").innerText()).trim();
    };
    const whoAt = async (base) => {
      await page.goto(`${base}/ui/`);
      const path = new URL(page.url()).pathname;
      if (path !== "/ui/") return "redirected to " + path;
      return (await page.locator("#user").innerText()).trim();
    };
    out.signedInA = await signIn(process.env.A, process.env.KEY_A);
    out.signedInB = await signIn(process.env.B, process.env.KEY_B);
    out.thenA = await whoAt(process.env.A);
    out.thenB = await whoAt(process.env.B);
    out.cookies = (await context.cookies()).map((c) => c.name).sort();
  } catch (e) {
    out.error = String(e && e.stack || e);
  }
  await browser.close();
  console.log(JSON.stringify(out));
})();
