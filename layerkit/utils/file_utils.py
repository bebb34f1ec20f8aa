"""``get_file``: Keras's dataset/weights file cache, without network access."""
from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
import urllib.parse
import urllib.request
import zipfile
from typing import Any

__all__ = ["get_file"]


def _cache_home(cache_dir) -> str:
    base = os.path.expanduser(os.fspath(cache_dir)) if cache_dir is not None else \
        os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    try:
        os.makedirs(base, exist_ok=True)
    except OSError:
        pass
    if not os.access(base, os.W_OK):   # as Keras: fall back to a temporary directory
        base = os.path.join("/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir(),
                            ".keras")
    return base


def _hash_file(path: str, algorithm: str) -> str:
    h = hashlib.sha256() if algorithm == "sha256" else hashlib.md5()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _algorithm(file_hash: str, hash_algorithm: str) -> str:
    if hash_algorithm not in ("auto", "sha256", "md5"):
        raise ValueError(f"get_file: hash_algorithm must be 'auto', 'sha256' or 'md5', "
                         f"received {hash_algorithm!r}")
    if hash_algorithm == "auto":
        return "sha256" if len(file_hash) == 64 else "md5"
    return hash_algorithm


def _local_source(origin: str) -> str | None:
    """The local path of a ``file://`` origin (or a plain path), else None."""
    parts = urllib.parse.urlsplit(origin)
    if parts.scheme == "file":
        return urllib.request.url2pathname(parts.path)
    if not parts.scheme and os.path.exists(origin):
        return origin
    return None


def _within(root: str, name: str) -> bool:
    target = os.path.realpath(os.path.join(root, name))
    return target == os.path.realpath(root) or target.startswith(os.path.realpath(root) + os.sep)


def _extract(archive: str, target: str, archive_format) -> bool:
    """Extract a tar or zip archive into ``target``; refuses members that would land
    outside it. Returns whether the file was an archive of an accepted format."""
    formats = {"auto": ("tar", "zip"), "tar": ("tar",), "zip": ("zip",)}.get(
        archive_format, tuple(archive_format or ()))
    tmp = target + ".partial"
    for fmt in formats:
        if fmt == "tar" and tarfile.is_tarfile(archive):
            with tarfile.open(archive) as tar:
                bad = [m.name for m in tar.getmembers() if not _within(tmp, m.name)
                       or m.issym() or m.islnk()]
                if bad:
                    raise ValueError(f"get_file: refusing to extract {archive}: members "
                                     f"{bad[:3]} are links or lie outside the target")
                shutil.rmtree(tmp, ignore_errors=True)
                if hasattr(tarfile, "data_filter"):   # Python >= 3.11.4: no special files
                    tar.extractall(tmp, filter="data")
                else:
                    tar.extractall(tmp)
        elif fmt == "zip" and zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                bad = [n for n in zf.namelist() if not _within(tmp, n)]
                if bad:
                    raise ValueError(f"get_file: refusing to extract {archive}: members "
                                     f"{bad[:3]} lie outside the target")
                shutil.rmtree(tmp, ignore_errors=True)
                zf.extractall(tmp)
        else:
            continue
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
        return True
    return False


def get_file(fname: Any = None, origin: Any = None, untar: bool = False, md5_hash: Any = None,
             file_hash: Any = None, cache_subdir: str = "datasets", hash_algorithm: str = "auto",
             extract: bool = False, archive_format: str = "auto", cache_dir: Any = None,
             force_download: bool = False) -> str:
    """A file from Keras's cache (``~/.keras/datasets`` by default), never downloaded.

    Keras 3's ``keras.utils.get_file`` with the same arguments, cache layout and return
    values, except that layerkit does not use the network: the file must already be in
    the cache (where a Keras program, or you, put it), or ``origin`` must be a local
    ``file://`` URL (or path), which is copied into the cache. With a hash, a cached file
    that does not match is replaced from a local origin, else refused.

    Args:
        fname: the file name in the cache (default: the last part of ``origin``'s path).
        origin: the file's URL (``https://...`` for a cached file, ``file://...``).
        untar: deprecated form of ``extract=True`` for tar files.
        md5_hash: deprecated form of ``file_hash`` with ``hash_algorithm='md5'``.
        file_hash: the expected sha256 or md5 hex digest.
        cache_subdir: the subdirectory of the cache.
        hash_algorithm: ``'auto'`` (by the digest's length), ``'sha256'`` or ``'md5'``.
        extract: extract a tar/zip archive; the extraction directory is returned.
        archive_format: ``'auto'``, ``'tar'``, ``'zip'`` or a list of them.
        cache_dir: the cache root (default ``$KERAS_HOME`` or ``~/.keras``).
        force_download: copy from the (local) origin even if the file is cached.

    Returns:
        The path of the cached file (or of the extraction directory).

    Raises:
        ValueError: no ``origin``, an ``fname`` that is a path, a hash mismatch, an
            archive member outside the target.
        FileNotFoundError: the file is not cached and ``origin`` is not a local file
            (layerkit downloads nothing): the message says where to put it.

    Examples:
        >>> import layerkit as lk, pathlib, tempfile
        >>> src = pathlib.Path(tempfile.mkdtemp()) / "data.csv"
        >>> _ = src.write_text("a,b\\n1,2\\n")
        >>> path = lk.utils.get_file(origin=src.as_uri(), cache_dir=tempfile.mkdtemp())
        >>> open(path).read().splitlines()
        ['a,b', '1,2']
    """
    if origin is None:
        raise ValueError('get_file: please specify the "origin" argument (the URL of the '
                         'file).')
    origin = os.fspath(origin)
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    algorithm = _algorithm(file_hash, hash_algorithm) if file_hash is not None else None
    datadir = os.path.join(_cache_home(cache_dir), cache_subdir)
    os.makedirs(datadir, exist_ok=True)
    given = os.fspath(fname) if fname is not None else None
    if not given:
        fname = os.path.basename(urllib.parse.urlsplit(origin).path)
        if not fname:
            raise ValueError(f"get_file: can't parse the file name from the origin provided: "
                             f"'{origin}'. Please specify the `fname` argument.")
    elif os.sep in given:
        raise ValueError(f"get_file: paths are not accepted as the `fname` argument; give "
                         f"the file's directory as `cache_dir`. Received: fname={given}")
    else:
        fname = given
    if extract or untar:   # Keras's names for the archive and the extraction directory
        if given and "." in fname:
            target = os.path.join(datadir, fname)
            extraction_dir = os.path.join(datadir, f"{fname[:fname.find('.')]}_extracted")
        else:
            target = os.path.join(datadir, f"{fname}_archive")
            extraction_dir = os.path.join(datadir, fname)
    else:
        target = os.path.join(datadir, fname)

    def matches() -> bool:
        return file_hash is None or algorithm is None or _hash_file(target, algorithm) == file_hash

    fetch = force_download or not os.path.exists(target) or not matches()
    if fetch:
        source = _local_source(origin)
        if source is None:
            state = ("is cached but its hash does not match" if os.path.exists(target)
                     else "is not in the cache")
            raise FileNotFoundError(
                f"get_file: {fname} {state} at {target}, and layerkit does not download "
                f"files ({origin}). Download it yourself and put it there, or pass a local "
                f"origin='file:///path/to/{fname}'.")
        if not os.path.isfile(source):
            raise FileNotFoundError(f"get_file: the origin file {source} does not exist")
        tmp = f"{target}.tmp{os.getpid()}"
        shutil.copyfile(source, tmp)
        os.replace(tmp, target)
        if not matches():
            raise ValueError(f"get_file: the {algorithm} hash of {target} (copied from "
                             f"{origin}) does not match the expected {file_hash}")
    if extract or untar:
        if fetch or not os.path.exists(extraction_dir):
            if not _extract(target, extraction_dir, "tar" if untar else archive_format):
                import warnings

                warnings.warn(f"get_file: could not extract {target} (not a tar or zip "
                              f"archive)", stacklevel=2)
        return extraction_dir
    return target
