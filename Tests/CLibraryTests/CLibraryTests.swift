import CLMDB
import CMbedTLS
import CNghttp2
import Crypto
import Glibc
import HTTP2
import Testing
import TokenStore

/// The three C libraries really work from Swift, linked the way the release binary links them.
@Suite struct CLibraryTests {
    @Test func sha256KnownVectorsThroughMbedTLS() {
        // FIPS 180-2 test vectors.
        #expect(SHA256.hexDigest(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hexDigest([UInt8]()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        let million = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(SHA256.hexDigest(million) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func reportedVersionsAreTheDebian12Ones() {
        #expect(MbedTLSLibrary.version.hasPrefix("2.28."))
        #expect(Nghttp2Library.version.hasPrefix("1.52."))
        #expect(LMDBLibrary.version == "0.9.24")
    }

    @Test func lmdbPutGetRoundTripInATemporaryDirectory() throws {
        var template = Array("/tmp/sokuho-lmdb-XXXXXX".utf8CString)
        let dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        defer { _ = unlink(dir + "/data.mdb"); _ = unlink(dir + "/lock.mdb"); _ = rmdir(dir) }

        var env: OpaquePointer?
        #expect(mdb_env_create(&env) == 0)
        defer { mdb_env_close(env) }
        #expect(mdb_env_set_mapsize(env, 1 << 20) == 0)
        #expect(mdb_env_open(env, dir, UInt32(MDB_NOTLS), 0o600) == 0)

        var txn: OpaquePointer?
        #expect(mdb_txn_begin(env, nil, 0, &txn) == 0)
        var dbi: MDB_dbi = 0
        #expect(mdb_dbi_open(txn, nil, 0, &dbi) == 0)
        var keyBytes = Array("token:abcd".utf8)
        var valueBytes = Array("installation-1".utf8)
        let putResult = keyBytes.withUnsafeMutableBytes { k in
            valueBytes.withUnsafeMutableBytes { v in
                var key = MDB_val(mv_size: k.count, mv_data: k.baseAddress)
                var value = MDB_val(mv_size: v.count, mv_data: v.baseAddress)
                return mdb_put(txn, dbi, &key, &value, 0)
            }
        }
        #expect(putResult == 0)
        #expect(mdb_txn_commit(txn) == 0)

        var readTxn: OpaquePointer?
        #expect(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &readTxn) == 0)
        defer { mdb_txn_abort(readTxn) }
        var found = MDB_val()
        let getResult = keyBytes.withUnsafeMutableBytes { k in
            var key = MDB_val(mv_size: k.count, mv_data: k.baseAddress)
            return mdb_get(readTxn, dbi, &key, &found)
        }
        #expect(getResult == 0)
        let read = Array(UnsafeRawBufferPointer(start: found.mv_data, count: found.mv_size))
        #expect(String(decoding: read, as: UTF8.self) == "installation-1")

        var missing = MDB_val()
        var absentBytes = Array("token:none".utf8)
        let absent = absentBytes.withUnsafeMutableBytes { k in
            var key = MDB_val(mv_size: k.count, mv_data: k.baseAddress)
            return mdb_get(readTxn, dbi, &key, &missing)
        }
        #expect(absent == MDB_NOTFOUND)
    }

    @Test func hpackDeflateInflateRoundTripThroughNghttp2() throws {
        let headers: [(String, String)] = [
            (":method", "POST"), (":path", "/3/device/0123456789abcdef"),
            ("apns-push-type", "liveactivity"), ("apns-topic", "com.example.eew.push-type.liveactivity"),
            ("apns-priority", "10"),
        ]
        var deflater: OpaquePointer?
        #expect(nghttp2_hd_deflate_new(&deflater, 4096) == 0)
        defer { nghttp2_hd_deflate_del(deflater) }
        var inflater: OpaquePointer?
        #expect(nghttp2_hd_inflate_new(&inflater) == 0)
        defer { nghttp2_hd_inflate_del(inflater) }

        // Deflate the same header block twice: the second is smaller (dynamic table), and both inflate.
        var sizes: [Int] = []
        for _ in 0..<2 {
            // strdup'd copies: nghttp2 reads the pointers during the call, so they must be stable.
            let copies = headers.map { (strdup($0.0)!, strdup($0.1)!) }
            defer { for (name, value) in copies { free(name); free(value) } }
            var nva = zip(copies, headers).map { copy, header in
                nghttp2_nv(name: UnsafeMutableRawPointer(copy.0).assumingMemoryBound(to: UInt8.self),
                           value: UnsafeMutableRawPointer(copy.1).assumingMemoryBound(to: UInt8.self),
                           namelen: header.0.utf8.count, valuelen: header.1.utf8.count,
                           flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            let bound = nghttp2_hd_deflate_bound(deflater, &nva, nva.count)
            var out = [UInt8](repeating: 0, count: bound)
            let written = nghttp2_hd_deflate_hd(deflater, &out, out.count, &nva, nva.count)
            #expect(written > 0)
            let block = Array(out.prefix(max(0, written)))
            sizes.append(block.count)

            var decoded: [(String, String)] = []
            var input = block
            var offset = 0
            while true {
                var nv = nghttp2_nv()
                var flags: Int32 = 0
                let consumed = input.withUnsafeMutableBufferPointer { buffer in
                    nghttp2_hd_inflate_hd2(inflater, &nv, &flags, buffer.baseAddress! + offset, buffer.count - offset, 1)
                }
                #expect(consumed >= 0)
                offset += consumed
                if flags & Int32(NGHTTP2_HD_INFLATE_EMIT.rawValue) != 0 {
                    let name = String(decoding: UnsafeBufferPointer(start: nv.name, count: nv.namelen), as: UTF8.self)
                    let value = String(decoding: UnsafeBufferPointer(start: nv.value, count: nv.valuelen), as: UTF8.self)
                    decoded.append((name, value))
                }
                if flags & Int32(NGHTTP2_HD_INFLATE_FINAL.rawValue) != 0 {
                    nghttp2_hd_inflate_end_headers(inflater)
                    break
                }
                if consumed == 0 && flags & Int32(NGHTTP2_HD_INFLATE_EMIT.rawValue) == 0 { break }
            }
            #expect(decoded.map(\.0) == headers.map(\.0))
            #expect(decoded.map(\.1) == headers.map(\.1))
        }
        #expect(sizes[1] < sizes[0] / 3, "indexed headers should shrink to a few bytes: \(sizes)")
    }
}
