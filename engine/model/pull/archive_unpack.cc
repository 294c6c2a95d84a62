#include "engine/model/pull/archive_unpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

#include <filesystem>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "engine/model/pull/safe_path.h"

namespace orca {
namespace {

struct ReadFree {
  void operator()(archive* a) const { archive_read_free(a); }
};
struct WriteFree {
  void operator()(archive* a) const { archive_write_free(a); }
};

std::string ErrorOf(archive* a) {
  const char* e = archive_error_string(a);
  return e != nullptr ? e : "unknown libarchive error";
}

// "./a/b" -> "a/b"; "a/b/" -> "a/b" (directories).
absl::string_view Normalise(absl::string_view name) {
  while (absl::ConsumePrefix(&name, "./")) {
  }
  while (absl::ConsumeSuffix(&name, "/")) {
  }
  return name;
}

}  // namespace

absl::Status UnpackTarArchive(const std::string& archive_path, const std::string& dir) {
  std::unique_ptr<archive, ReadFree> in(archive_read_new());
  std::unique_ptr<archive, WriteFree> out(archive_write_disk_new());
  if (!in || !out) return absl::InternalError("libarchive: out of memory");
  archive_read_support_format_tar(in.get());
  archive_read_support_format_gnutar(in.get());
  archive_read_support_filter_gzip(in.get());
  archive_read_support_filter_none(in.get());
  // Entries are written at canonical_dir/NAME: absolute paths, so libarchive's
  // no-absolute-paths guard cannot be on (CheckRelativePath covers it), and canonical so
  // that a symlink above `dir` (a volume mount) does not trip its symlink guard.
  std::error_code ec;
  std::string root = std::filesystem::canonical(dir, ec).string();
  if (ec) return absl::NotFoundError(absl::StrCat("cannot resolve ", dir, ": ", ec.message()));
  archive_write_disk_set_options(out.get(),
                                 ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_SYMLINKS);
  auto where = [&](absl::string_view entry) {
    return absl::StrCat("archive ", archive_path, entry.empty() ? "" : ", entry '", entry,
                        entry.empty() ? "" : "'");
  };
  if (archive_read_open_filename(in.get(), archive_path.c_str(), 1 << 16) != ARCHIVE_OK) {
    return absl::DataLossError(absl::StrCat(where(""), ": ", ErrorOf(in.get())));
  }
  archive_entry* e = nullptr;
  int entries = 0;
  while (true) {
    int rc = archive_read_next_header(in.get(), &e);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
      return absl::DataLossError(absl::StrCat(where(""), ": ", ErrorOf(in.get())));
    }
    const char* raw = archive_entry_pathname(e);
    std::string original = raw != nullptr ? raw : "";
    absl::string_view name = Normalise(original);
    if (name.empty() || name == ".") continue;  // the archive's root directory
    if (auto s = CheckRelativePath(name); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where(original), " refused: ", s.message()));
    }
    ++entries;
    mode_t type = archive_entry_filetype(e);
    const char* hardlink = archive_entry_hardlink(e);
    if (hardlink != nullptr) {
      absl::string_view target = Normalise(hardlink);
      if (auto s = CheckRelativePath(target); !s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where(original), " refused: hard link target: ", s.message()));
      }
      archive_entry_set_hardlink(e, absl::StrCat(root, "/", target).c_str());
    } else if (type == AE_IFLNK) {
      const char* target = archive_entry_symlink(e);
      if (auto s = CheckLinkTarget(name, target != nullptr ? target : ""); !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(where(original), " refused: ", s.message()));
      }
    } else if (type != AE_IFREG && type != AE_IFDIR) {
      return absl::InvalidArgumentError(absl::StrCat(
          where(original), " refused: only files, directories and links may be unpacked"));
    }
    archive_entry_set_pathname(e, absl::StrCat(root, "/", name).c_str());
    archive_entry_set_perm(e, type == AE_IFDIR ? 0755 : 0644);
    if (archive_write_header(out.get(), e) != ARCHIVE_OK) {
      return absl::InvalidArgumentError(absl::StrCat(where(original), ": ", ErrorOf(out.get())));
    }
    if (archive_entry_size(e) > 0 && hardlink == nullptr) {
      const void* buf = nullptr;
      size_t size = 0;
      la_int64_t offset = 0;
      while ((rc = archive_read_data_block(in.get(), &buf, &size, &offset)) == ARCHIVE_OK) {
        if (archive_write_data_block(out.get(), buf, size, offset) != ARCHIVE_OK) {
          return absl::InternalError(absl::StrCat(where(original), ": ", ErrorOf(out.get())));
        }
      }
      if (rc != ARCHIVE_EOF) {
        return absl::DataLossError(absl::StrCat(where(original), ": ", ErrorOf(in.get())));
      }
    }
    if (archive_write_finish_entry(out.get()) != ARCHIVE_OK) {
      return absl::InternalError(absl::StrCat(where(original), ": ", ErrorOf(out.get())));
    }
  }
  if (archive_write_close(out.get()) != ARCHIVE_OK) {
    return absl::InternalError(absl::StrCat(where(""), ": ", ErrorOf(out.get())));
  }
  if (entries == 0) return absl::InvalidArgumentError(absl::StrCat(where(""), " is empty"));
  return absl::OkStatus();
}

}  // namespace orca
