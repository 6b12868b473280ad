// The keys of Filter.containsMany, hashed and placed many at a time. contains() makes one native
// call per key to hash it, and that call is most of a check's time; here the keys' bytes are
// written one after the other into the memory of a small WebAssembly module (wasm/place.c:
// xxHash's XXH3, as the server hashes, and the placement of docs/format.md), which hashes and
// places up to 1024 of them in one call. A run of strings is copied with one
// TextEncoder.encodeInto when it is all ASCII, else with one Buffer.write as UTF-16, turned into
// UTF-8 by the module string by string.

import { PLACE_WASM } from "./place-wasm.js";

// The part of the WebAssembly API used here: Node.js has it, but its types are in TypeScript's DOM
// library, not in @types/node 18.
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: object };
};

interface Memory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

type Place = (keys: number, offsets: number, count: number, scratch: number, blocks: number, blockLog2: number,
  hashes: number, out: number) => void;

interface PlaceExports {
  memory: Memory;
  bloom_place_v1: Place;
  bloom_place_v2: Place;
  bloom_place_layers: (keys: number, offsets: number, count: number, scratch: number, layers: number,
    layerCount: number, out: number) => void;
  __heap_base: { readonly value: number };
}

/** What a key the fast paths below do not take is hashed as: the function contains() uses
 * (it throws the same errors for the same keys). */
export type GeneralInput = (key: unknown, type: string | undefined) => string | Uint8Array;

const MAX_KEYS = 1024;
/** The room for one call's keys, grown for a single key that needs more. */
const KEY_BYTES = 1 << 18;
const PAGE = 65536;
const TWO32 = 4294967296;
const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;
/** Set in a key's end offset: the key is a string, in UTF-16LE. */
const UTF16 = 0x80000000;
const encoder = new TextEncoder();

/**
 * One call's keys, in the module's memory: `offsets` (count + 1 words: key i is the bytes
 * [offsets[i], offsets[i + 1]) after `keysAt`, the UTF16 bit aside), then `out` (1 + hashes words
 * per key: the block, then the bit positions), then the keys, then room for the UTF-8 of the
 * longest string written in UTF-16. One instance serves every filter: JavaScript runs one
 * containsMany at a time.
 */
export class KeyBatch {
  private readonly exports: PlaceExports;
  private readonly general: GeneralInput;
  private readonly uuid: new (...args: never[]) => { bytes: Uint8Array };
  private u8!: Uint8Array;
  /** The module's memory as words: out is read through it. */
  u32!: Uint32Array;
  private buffer!: Buffer;
  private view!: DataView;
  private offsetsAt = 0;
  /** The byte address of out: the block and positions of key i are at outAt / 4 + i * (1 + hashes). */
  outAt = 0;
  private keysAt = 0;
  private keysEnd = 0;
  /** Where the next key's bytes go. */
  private position = 0;
  private maxKeys = 0;
  /** Keys in this call. */
  private count = 0;
  /** UTF-16 units of the call's longest string. */
  private longest = 0;

  /** `general`: how contains() reads a key the fast paths here do not take; `uuid`: the Uuid
   * class, whose keys are their bytes. */
  constructor(general: GeneralInput, uuid: new (...args: never[]) => { bytes: Uint8Array }) {
    const module = new WebAssembly.Module(Buffer.from(PLACE_WASM, "base64"));
    this.exports = new WebAssembly.Instance(module, {}).exports as unknown as PlaceExports;
    this.general = general;
    this.uuid = uuid;
    this.views();
  }

  private views(): void {
    const buffer = this.exports.memory.buffer;
    this.u8 = new Uint8Array(buffer);
    this.u32 = new Uint32Array(buffer);
    this.buffer = Buffer.from(buffer);
    this.view = new DataView(buffer);
  }

  /** Makes the memory at least `bytes` long. */
  private reserve(bytes: number): void {
    const memory = this.exports.memory;
    if (memory.buffer.byteLength < bytes) {
      memory.grow(Math.ceil((bytes - memory.buffer.byteLength) / PAGE));
      this.views();
    }
  }

  /** Starts a call for a filter of `hashes` positions per key. */
  begin(hashes: number): void {
    const stride = 4 * (1 + hashes);
    this.maxKeys = Math.max(1, Math.min(MAX_KEYS, Math.floor(KEY_BYTES / stride)));
    this.offsetsAt = (this.exports.__heap_base.value + 7) & ~7;
    this.outAt = this.offsetsAt + 4 * (this.maxKeys + 1);
    this.keysAt = this.outAt + stride * this.maxKeys;
    this.keysEnd = this.keysAt + KEY_BYTES;
    this.reserve(this.keysEnd);
    this.position = this.keysAt;
    this.count = 0;
    this.longest = 0;
    this.u32[this.offsetsAt >>> 2] = 0;
  }

  /** Whether one more key of `bytes` bytes fits in this call; the first key always does (the
   * memory grows for it). */
  private fits(bytes: number): boolean {
    if (this.count === this.maxKeys) return false;
    if (this.position + bytes <= this.keysEnd) return true;
    if (this.count > 0) return false;
    this.keysEnd = this.position + bytes;
    this.reserve(this.keysEnd);
    return true;
  }

  /** Adds keys from list[start] on, each hashed as contains(key, type) hashes it, as many as this
   * call takes: returns the index of the first key not added. Throws contains()'s errors. */
  add(list: readonly unknown[], start: number, type: string | undefined): number {
    const text = type === undefined || type === "text";
    let i = start;
    while (i < list.length) {
      const key = list[i];
      if (text && typeof key === "string") {
        const end = this.addStrings(list, i);
        if (end === i) break;
        i = end;
      } else if (this.addOne(key, type)) {
        i += 1;
      } else {
        break;
      }
    }
    return i;
  }

  private addOne(key: unknown, type: string | undefined): boolean {
    switch (typeof key) {
      case "number":
        if ((type === undefined || type === "bigint") && Number.isSafeInteger(key)) {
          if (!this.fits(8)) return false;
          this.view.setUint32(this.position, key >>> 0, true);
          this.view.setInt32(this.position + 4, Math.floor(key / TWO32) | 0, true);
          return this.written(8);
        }
        break;
      case "bigint":
        if ((type === undefined || type === "bigint") && key >= INT64_MIN && key <= INT64_MAX) {
          if (!this.fits(8)) return false;
          this.view.setBigInt64(this.position, key, true);
          return this.written(8);
        }
        break;
      case "object":
        if ((type === undefined || type === "bytea") && key instanceof Uint8Array) return this.addBytes(key);
        // Exactly a Uuid (a subclass goes the general way): cheaper than instanceof of a class
        // held in a property.
        if ((type === undefined || type === "uuid") && key !== null && key.constructor === this.uuid) {
          return this.addBytes((key as { bytes: Uint8Array }).bytes);
        }
        break;
    }
    const input = this.general(key, type);
    if (typeof input !== "string") return this.addBytes(input);
    if (!this.fits(3 * input.length)) return false;
    this.writeStrings([input], 0, 1, input);
    return true;
  }

  private addBytes(bytes: Uint8Array): boolean {
    const length = bytes.byteLength;
    if (!this.fits(length)) return false;
    const u8 = this.u8, at = this.position;
    if (length <= 32) for (let i = 0; i < length; i++) u8[at + i] = bytes[i];
    else u8.set(bytes, at);
    return this.written(length);
  }

  /** A key of `length` bytes was written at position. */
  private written(length: number): boolean {
    this.position += length;
    this.count += 1;
    this.u32[(this.offsetsAt >>> 2) + this.count] = this.position - this.keysAt;
    return true;
  }

  /** Adds the strings from list[start] on, as many as fit: returns the index after the last one
   * added. Room is kept for 3 bytes per UTF-16 unit, UTF-8's most. */
  private addStrings(list: readonly unknown[], start: number): number {
    const limit = Math.min(list.length, start + this.maxKeys - this.count);
    let room = this.keysEnd - this.position, bytes = 0, run = "", i = start;
    for (; i < limit; i++) {
      const key = list[i];
      if (typeof key !== "string") break;
      bytes += 3 * key.length;
      if (bytes > room) {
        if (i > start || this.count > 0) break;
        this.fits(bytes);
        room = bytes;
      }
      run += key;
    }
    if (i > start) this.writeStrings(list, start, i, run);
    return i;
  }

  /** Writes the strings list[start..end), whose concatenation is `run`. All ASCII, as UTF-8 with
   * one encodeInto (a string's length is then its number of bytes); else in UTF-16LE with one
   * Buffer.write, each string turned into UTF-8 on its own by the module (as TextEncoder does,
   * an unpaired surrogate into U+FFFD, even where the next string starts with the other half). */
  private writeStrings(list: readonly unknown[], start: number, end: number, run: string): void {
    const u32 = this.u32, first = (this.offsetsAt >>> 2) + this.count + 1;
    const { read, written } = encoder.encodeInto(run, this.u8.subarray(this.position, this.keysEnd));
    let at = this.position - this.keysAt;
    if (written === read) {
      for (let i = start, o = first; i < end; i++, o++) u32[o] = at += (list[i] as string).length;
    } else {
      this.buffer.write(run, this.position, "utf16le");
      let longest = this.longest;
      for (let i = start, o = first; i < end; i++, o++) {
        const length = (list[i] as string).length;
        if (length > longest) longest = length;
        at += 2 * length;
        u32[o] = (at | UTF16) >>> 0;
      }
      this.longest = longest;
    }
    this.position = this.keysAt + at;
    this.count += end - start;
  }

  /** Hashes and places this call's keys: for key i, out holds (at outAt / 4 + i * (1 + hashes))
   * its block, then its bit positions. */
  place(version: number, blocks: number, blockLog2: number, hashes: number): void {
    const scratch = (this.position + 7) & ~7;
    this.reserve(scratch + 3 * this.longest);
    const place = version === 1 ? this.exports.bloom_place_v1 : this.exports.bloom_place_v2;
    place(this.keysAt, this.offsetsAt, this.count, scratch, blocks, blockLog2, hashes, this.outAt);
  }

  /** Hashes this call's keys once and places them in each layer of a layered value (of less
   * than 2^29 bytes): `layers` holds a (blocks, blockLog2, hashes, start) quadruple per layer,
   * start the byte where its blocks begin, in the order they are to be tested; out holds for key
   * i (at outAt / 4 + i * the sum of the hashes) the number in the value of each of its bits,
   * layer after layer. begin() is given that sum. */
  placeLayers(layers: Uint32Array): void {
    const scratch = (this.position + 7) & ~7;
    const layersAt = (scratch + 3 * this.longest + 3) & ~3;
    this.reserve(layersAt + 4 * layers.length);
    this.u32.set(layers, layersAt >>> 2);
    this.exports.bloom_place_layers(this.keysAt, this.offsetsAt, this.count, scratch, layersAt, layers.length / 4,
      this.outAt);
  }
}
