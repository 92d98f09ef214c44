// Shared by the aic_*.mjs generators: reads one of ai-dynamo/aiconfigurator's
// measured parquet tables into an array of row objects (dev-only; needs
// `npm install hyparquet hyparquet-compressors`).
import { parquetReadObjects } from 'hyparquet'
import { compressors } from 'hyparquet-compressors'
import fs from 'fs'

export async function readTable(path) {
  const buf = fs.readFileSync(path)
  return parquetReadObjects({
    file: buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength),
    compressors })
}
