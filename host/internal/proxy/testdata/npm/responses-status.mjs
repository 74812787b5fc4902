// Asks sextant's recording proxy for a Responses answer with the official
// openai client: node responses-status.mjs BASE_URL MODE, where MODE is
// "whole" or "stream". Prints the response's status as the client saw it,
// and for a stream the type of its last event, as one JSON document.
import OpenAI from "openai";

const [baseURL, mode] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "sk-not-a-real-key", maxRetries: 0 });
const task = { headers: { "X-Sextant-Task": "npm-" + mode } };

async function main() {
  const req = { model: "gpt-4o-mini", input: "hello" };
  if (mode === "whole") {
    const r = await client.responses.create(req, task);
    return { status: r.status, error: r.error?.message ?? "" };
  }
  let last = null;
  try {
    const stream = await client.responses.create({ ...req, stream: true }, task);
    for await (const ev of stream) last = ev;
  } catch (e) {
    return { thrown: e.message, last: last?.type ?? "" };
  }
  return { status: last?.response?.status ?? "", last: last?.type ?? "" };
}

main().then((out) => console.log(JSON.stringify(out)), (e) => { console.error(e); process.exit(1); });
