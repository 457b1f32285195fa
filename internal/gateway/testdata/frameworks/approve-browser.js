// Approves a framework's pending call in reach's UI, in Debian's chromium
// through playwright-core: the approval is in the inbox with its tool and
// arguments, a reason is typed and the approve button pressed.
// Env: BASE, CHROMIUM, PW. Prints "ready" once the browser shows the
// inbox, then reads the approval's id from stdin (a line), approves it and
// prints one JSON object with what it saw; the Go test asserts on it. So
// the browser's start is not in the time a held call waits.
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
    await page.goto(`${base}/ui/approvals`);
    console.log("ready");
    const id = await new Promise((resolve) => {
      let buf = "";
      process.stdin.on("data", (d) => { buf += d; if (buf.includes("\n")) resolve(buf.trim()); });
    });
    await page.goto(`${base}/ui/approvals`);
    const item = page.locator(`.approval[data-approval="${id}"]`);
    await item.waitFor();
    out.state = (await item.locator(".head .state").innerText()).trim();
    out.text = (await item.innerText()).replace(/\s+/g, " ").trim();
    const form = `form[action="/ui/approvals/${id}/approve"]`;
    await page.locator(`${form} input[name="reason"]`).fill("checked the order");
    await Promise.all([page.waitForNavigation(), page.locator(`${form} button`).click()]);
    out.flash = (await page.locator(".flash").innerText()).trim();
  } catch (e) {
    out.error = String(e && e.stack || e);
    try { out.error += "\n" + (await browser.contexts()[0].pages()[0].content()).slice(0, 3000); } catch (_) {}
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(out));
  process.exit(0);
})();
