"""Share links and data export (components/share.py): the buttons and the warning for a bad link setting."""

STRINGS = {
    "en": {
        "share_button": "Share link",
        "share_url": "Link to this tab with these settings",
        "share_download": "Download figure data (JSON)",
        "share_bad_setting": "link setting {setting}={value} ignored: not an allowed value",
        "share_bad_value": "link setting {setting}={value} ({label}) ignored: allowed {allowed}",
        "share_bad_range": "{low} to {high}",
        "share_bad_text": "text of at most {n:,} characters",
        "share_text_left_out": "the link leaves out {label} ({length:,} characters; a link holds at most {n:,}): "
                               "it opens with the default there",
    },
    "zh-CN": {
        "share_button": "分享链接",
        "share_url": "带当前设置打开本页的链接",
        "share_download": "下载图表数据（JSON）",
        "share_bad_setting": "已忽略链接中的设置 {setting}={value}：不是允许的值",
        "share_bad_value": "已忽略链接中的设置 {setting}={value}（{label}）：允许的值为 {allowed}",
        "share_bad_range": "{low} 到 {high}",
        "share_bad_text": "最多 {n:,} 个字符的文本",
        "share_text_left_out": "链接未包含“{label}”（{length:,} 个字符；链接最多容纳 {n:,} 个）：打开时该处为默认值",
    },
}
