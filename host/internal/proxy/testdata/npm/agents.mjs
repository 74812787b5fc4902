// Runs a tool-calling agent of the OpenAI Agents SDK through sextant's
// recording proxy: node agents.mjs BASE_URL API [stream], where API is
// "responses" (the Responses API) or "chat_completions". The agent asks
// for the weather, the model calls get_weather, the agent runs it and the
// model answers with its result. With "stream" the run is streamed
// (run(…, { stream: true })): its events are consumed as they come and
// the run awaited through result.completed. Prints what the agent saw as
// one JSON document; toolCalls counts the tool's runs.
import OpenAI from "openai";
import { Agent, run, tool, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } from "@openai/agents";
import { z } from "zod";

const [baseURL, api, mode] = process.argv.slice(2);
const streamed = mode === "stream";
setTracingDisabled(true); // no trace export: the machine has no network
setDefaultOpenAIClient(new OpenAI({
  baseURL, apiKey: "sk-not-a-real-key", maxRetries: 0,
  defaultHeaders: { "X-Sextant-Task": "agents-" + api + (streamed ? "-stream" : "") },
}));
setOpenAIAPI(api);

const calls = [];
const getWeather = tool({
  name: "get_weather",
  description: "The current weather in a city",
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => {
    calls.push(city);
    return "sunny and 21 degrees";
  },
});

const agent = new Agent({
  name: "Forecaster",
  instructions: "Answer with the weather tool.",
  model: "gpt-4o-mini",
  tools: [getWeather],
  // A parameter no SDK type names, passed to the model as it is.
  modelSettings: { providerData: { frobnicate: 7 } },
});

const input = "What is the weather in Paris?";
let result, stream;
if (streamed) {
  result = await run(agent, input, { stream: true });
  // What the stream showed: the run items in order, the model's text as
  // its deltas arrived, and how many raw model events came.
  stream = { items: [], text: "", rawEvents: 0 };
  for await (const ev of result.toStream()) {
    if (ev.type === "run_item_stream_event") stream.items.push(ev.name);
    if (ev.type === "raw_model_stream_event") {
      stream.rawEvents++;
      if (ev.data.type === "output_text_delta") stream.text += ev.data.delta;
    }
  }
  await result.completed;
  if (result.error) throw result.error;
} else {
  result = await run(agent, input);
}
process.stdout.write(JSON.stringify({
  final: result.finalOutput,
  stream,
  toolCalls: calls,
  items: result.newItems.map((i) => i.type),
  responses: result.rawResponses.map((r) => ({ id: r.responseId, usage: r.usage && { input: r.usage.inputTokens, output: r.usage.outputTokens } })),
}));
