import { describe, expect, it } from "vitest";
import { parseLastEventId, sseFrame } from "./sse";

describe("server-sent event frames", () => {
  it("writes event, id and one data line per payload line, ended by a blank line", () => {
    expect(sseFrame({ event: "state", id: "12", data: '{"a":1}' })).toBe('event: state\nid: 12\ndata: {"a":1}\n\n');
    expect(sseFrame({ data: "one\ntwo\r\nthree" })).toBe("data: one\ndata: two\ndata: three\n\n");
  });

  it("reads Last-Event-ID as a revision, the end marker, nothing, or something this stream never sent", () => {
    expect(parseLastEventId(undefined)).toEqual({ kind: "none" });
    expect(parseLastEventId("  ")).toEqual({ kind: "none" });
    expect(parseLastEventId("42")).toEqual({ kind: "revision", revision: 42 });
    expect(parseLastEventId(["1", "7"])).toEqual({ kind: "revision", revision: 7 });
    expect(parseLastEventId("end")).toEqual({ kind: "end" });
    for (const bad of ["-1", "1.5", "12abc", "9".repeat(16), "END"]) expect(parseLastEventId(bad), bad).toEqual({ kind: "invalid" });
  });
});
