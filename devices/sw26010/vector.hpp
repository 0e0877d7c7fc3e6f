#pragma once
// The CPE's 256-bit vector types: 4 doubles or 4 floats (single precision
// runs at the double-precision rate on the SW26010, so both are 4 lanes).

#include <cstring>

namespace taihu::sw26010 {

template <class T>
struct alignas(32) Vec4 {
  T lane[4];

  static Vec4 splat(T x) { return {{x, x, x, x}}; }
  static Vec4 load(const T* p) {
    Vec4 v;
    std::memcpy(v.lane, p, sizeof v.lane);
    return v;
  }
  void store(T* p) const { std::memcpy(p, lane, sizeof lane); }
  T operator[](int i) const { return lane[i]; }
  T& operator[](int i) { return lane[i]; }

  friend Vec4 operator+(Vec4 a, const Vec4& b) {
    for (int i = 0; i < 4; ++i) a.lane[i] += b.lane[i];
    return a;
  }
  friend Vec4 operator-(Vec4 a, const Vec4& b) {
    for (int i = 0; i < 4; ++i) a.lane[i] -= b.lane[i];
    return a;
  }
  friend Vec4 operator*(Vec4 a, const Vec4& b) {
    for (int i = 0; i < 4; ++i) a.lane[i] *= b.lane[i];
    return a;
  }
  friend bool operator==(const Vec4& a, const Vec4& b) {
    for (int i = 0; i < 4; ++i)
      if (a.lane[i] != b.lane[i]) return false;
    return true;
  }
};

using doublev4 = Vec4<double>;
using floatv4 = Vec4<float>;

// a * b + c, lane by lane (vmad).
template <class T>
Vec4<T> vmad(const Vec4<T>& a, const Vec4<T>& b, const Vec4<T>& c) {
  Vec4<T> r;
  for (int i = 0; i < 4; ++i) r.lane[i] = a.lane[i] * b.lane[i] + c.lane[i];
  return r;
}
template <class T>
Vec4<T> vmax(const Vec4<T>& a, const Vec4<T>& b) {
  Vec4<T> r;
  for (int i = 0; i < 4; ++i) r.lane[i] = a.lane[i] > b.lane[i] ? a.lane[i] : b.lane[i];
  return r;
}
inline doublev4 widen(const floatv4& f) { return {{f.lane[0], f.lane[1], f.lane[2], f.lane[3]}}; }
inline floatv4 narrow(const doublev4& d) {
  return {{float(d.lane[0]), float(d.lane[1]), float(d.lane[2]), float(d.lane[3])}};
}
// vshff-style shuffle: lanes 0,1 from a picked by i0,i1; lanes 2,3 from b by i2,i3.
template <class T>
Vec4<T> shuffle(const Vec4<T>& a, const Vec4<T>& b, int i0, int i1, int i2, int i3) {
  return {{a.lane[i0], a.lane[i1], b.lane[i2], b.lane[i3]}};
}

}  // namespace taihu::sw26010
