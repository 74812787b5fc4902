// One streamed turn on an official client's stream helper through
// sextant's recording proxy: node stream-cut.mjs BASE_URL TASK API, API
// being messages (@anthropic-ai/sdk, messages.stream().finalMessage())
// or responses (openai, responses.stream().finalResponse()). Prints what
// the client saw as one JSON document: the event types and text as they
// came, and the final message's text or the error the helper raised.
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";

const [baseURL, task, api] = process.argv.slice(2);
const opts = { headers: { "X-Sextant-Task": task } };

async function main() {
  const seen = { events: [], text: "" };
  try {
    if (api === "messages") {
      const client = new Anthropic({ baseURL, apiKey: "sk-not-a-real-key", maxRetries: 0 });
      const stream = client.messages.stream({ model: "claude-test", max_tokens: 64, messages: [{ role: "user", content: "Say hi." }] }, opts);
      stream.on("text", (d) => { seen.text += d; });
      for await (const ev of stream) seen.events.push(ev.type);
      const m = await stream.finalMessage();
      seen.final = m.content.filter((b) => b.type === "text").map((b) => b.text).join("");
    } else {
      const client = new OpenAI({ baseURL: baseURL + "/v1", apiKey: "sk-not-a-real-key", maxRetries: 0 });
      const stream = client.responses.stream({ model: "gpt-4o-mini", input: "Say hi." }, opts);
      for await (const ev of stream) {
        seen.events.push(ev.type);
        if (ev.type === "response.output_text.delta") seen.text += ev.delta;
      }
      const r = await stream.finalResponse();
      seen.final = r.output_text;
    }
  } catch (e) {
    seen.error = { name: e.constructor.name, message: e.message };
  }
  return seen;
}

main().then(
  (v) => { process.stdout.write(JSON.stringify(v)); },
  (e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); },
);
